"""MesaNet as a transformers model: `MesaNetConfig`, `MesaNetModel`, `MesaNetForCausalLM`.

Importing this module registers them with ``AutoConfig``, ``AutoModel`` and
``AutoModelForCausalLM`` (model type ``"mesa_layer_mesanet"``; fla's own ``"mesa_net"`` is
left alone), so after ``import mesa_layer.hf`` a saved folder loads with
``AutoModelForCausalLM.from_pretrained(path)``. ``import mesa_layer`` does not do this itself:
it stays free of torch and transformers (a second or more to import).
"""

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from mesa_layer.hf.configuration import MesaNetConfig
from mesa_layer.hf.modeling import MesaNetCache, MesaNetForCausalLM, MesaNetModel

AutoConfig.register(MesaNetConfig.model_type, MesaNetConfig, exist_ok=True)
AutoModel.register(MesaNetConfig, MesaNetModel, exist_ok=True)
AutoModelForCausalLM.register(MesaNetConfig, MesaNetForCausalLM, exist_ok=True)

__all__ = ["MesaNetCache", "MesaNetConfig", "MesaNetForCausalLM", "MesaNetModel"]
