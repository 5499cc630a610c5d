"""One client layer for every model call."""

from silas_exp.llm.accounting import Accounting
from silas_exp.llm.base import LLMRequest, LLMResponse, Message, Usage
from silas_exp.llm.client import LLMClient, build_client
from silas_exp.llm.settings import LLMSettings, ModelPrice
from silas_exp.llm.simulated import SimulatedBackend, register_responder

__all__ = [
    "Accounting",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "LLMSettings",
    "Message",
    "ModelPrice",
    "SimulatedBackend",
    "Usage",
    "build_client",
    "register_responder",
]
