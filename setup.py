from setuptools import find_packages, setup

setup(
    name="fairseq-plugins",
    version="0.1.0",
    description="fairseq plugin: Compositional Attention, compositional-generalization "
    "Transformer variants and the Graph-Transformer encoder",
    packages=find_packages(include=["fairseq_plugins", "fairseq_plugins.*"]),
    python_requires=">=3.10",
    # torch and fairseq (ve-fairseq==0.12.3, --no-deps) are installed by scripts/setup.sh
    install_requires=["sentencepiece", "sacremoses", "sacrebleu", "matplotlib"],
)
