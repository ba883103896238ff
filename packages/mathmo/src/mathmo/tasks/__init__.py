"""The modelling tasks: TSP, job-shop scheduling, ecology, epidemiology, and a planted one."""

from mathmo.tasks.base import Candidate, Framework, ModelCard, Task
from mathmo.tasks.planted import PlantedTask

__all__ = ["Candidate", "Framework", "ModelCard", "PlantedTask", "Task"]
