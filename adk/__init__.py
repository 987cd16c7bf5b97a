"""factledger as a google-adk memory service (the `factledger[adk]` extra); see docs/adk.md.

`partition` (caller ids to partition names), `delta` (which events are new), `entries` (facts
out as `MemoryEntry`, entries in as candidates), `errors` (what a caller can catch) and `service`
(the `BaseMemoryService` itself).
"""

from factledger.adk.entries import memory_entries
from factledger.adk.errors import CorruptLedger, InvalidId, InvalidMemory, MemoryNotFound, SharedMemory
from factledger.adk.service import DEFAULT_CLEARANCE, LedgerMemoryService

__all__ = ["DEFAULT_CLEARANCE", "CorruptLedger", "InvalidId", "InvalidMemory", "LedgerMemoryService",
           "MemoryNotFound", "SharedMemory", "memory_entries"]
