"""The FEM LM as a transformers model: `FEMConfig`, `FEMModel`, `FEMForCausalLM`.

Importing this module registers them with ``AutoConfig``, ``AutoModel`` and
``AutoModelForCausalLM`` (model type ``"free_energy_mixer"``), so after
``import free_energy_mixer.hf`` a saved folder loads with
``AutoModelForCausalLM.from_pretrained(path)``. ``import free_energy_mixer`` does not do this
itself: it stays free of torch and transformers.
"""

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

from free_energy_mixer.hf.configuration import FEMConfig
from free_energy_mixer.hf.modeling import FEMForCausalLM, FEMLMCache, FEMModel

AutoConfig.register(FEMConfig.model_type, FEMConfig, exist_ok=True)
AutoModel.register(FEMConfig, FEMModel, exist_ok=True)
AutoModelForCausalLM.register(FEMConfig, FEMForCausalLM, exist_ok=True)

__all__ = ["FEMConfig", "FEMForCausalLM", "FEMLMCache", "FEMModel"]
