from setuptools import find_packages, setup

setup(
    name="fairseq-plugins",
    version="0.1.0",
    description="fairseq plugin: Compositional Attention, compositional-generalization "
    "Transformer variants and the Graph-Transformer encoder",
    # plugin_tools: the pure-Python helpers (no torch, no fairseq) that the plugin and scripts share
    # studies: the research drivers and report generators (templates/*.md beside them)
    packages=find_packages(
        include=[
            "fairseq_plugins",
            "fairseq_plugins.*",
            "plugin_tools",
            "plugin_tools.*",
            "studies",
        ]
    ),
    package_data={"studies": ["templates/*.md"]},
    python_requires=">=3.10",
    # torch and fairseq (ve-fairseq==0.12.3, --no-deps) are installed by scripts/setup.sh
    install_requires=["sentencepiece", "sacremoses", "sacrebleu", "matplotlib"],
)
