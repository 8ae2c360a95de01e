"""Layer weight sharing (Universal Transformer without adaptive halting).

fairseq keys incremental decoding state by module instance, so one layer object used N times would
corrupt the decoding cache. Instead we keep N layer objects and make them share their Parameters
(the official compositional-attention code's ``copy_params`` pattern): each layer keeps its own
state, all of them train one set of weights.
"""


def tie_parameters(modules):
    """Make every module use the parameters of the first earlier module that has one of the same
    qualified name and shape. Modules with extra parts (e.g. Graph-Transformer layers after a
    standard first layer) share what they have in common and tie their extras among themselves.
    """
    owners = {}
    for module in modules:
        for prefix, sub in module.named_modules():
            for name, param in list(sub._parameters.items()):
                if param is None:
                    continue
                key = f"{prefix}.{name}" if prefix else name
                owner = owners.get(key)
                if owner is not None and owner.shape == param.shape:
                    sub._parameters[name] = owner
                else:
                    owners[key] = param
