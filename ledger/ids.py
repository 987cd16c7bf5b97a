"""UUIDv7 text ids: time-ordered, so ids sort roughly like the log, and unique across processes."""

from __future__ import annotations

import os
import time


def new_id() -> str:
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    # str(uuid.UUID(int=value)), without building the object (same text: 8-4-4-4-12 lowercase hex)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
