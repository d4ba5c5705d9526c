#!/usr/bin/env python3
"""Prints, as JSON, what ROCm 6.3's HIP headers say about the ABI that hip-sys binds, read from PyPI's hip-python
6.3.3 (its Cython extension is compiled from those headers, so its structs have their real layout):

- every field offset and the size of hipDeviceProp_tR0600 (hip-python's hipDeviceProp_t), hipDeviceArch_t, hipUUID;
- the values of the enums hip-sys uses (hipDeviceAttribute_t, hipError_t, hipFunction_attribute, hipMemcpyKind,
  hipStreamCaptureMode);
- the prototypes of the runtime functions, from the package's chip.pxd (generated from the same headers).

No GPU and no HIP runtime are needed: the structs are allocated and read in host memory. Offsets are found by
filling the struct with a pattern in which every 4-byte word names its own index, then reading each field through
its accessor and decoding the word it starts with. Used by hip-sys/tests/rocm63_abi.rs."""
import ctypes
import json
import os
import re
import sys

from hip import hip  # pip install hip-python==6.3.3.540.31

WORD_TAG = (0x7E, 0x5A)


def word_bytes(index):
    # No byte is 0, so a char array reads through to its end, and each word is unique in the first 4096 of them.
    return bytes([0x20 + (index & 0x3F), 0x20 + ((index >> 6) & 0x3F), *WORD_TAG])


def decode(first4):
    b = bytes(first4)
    if len(b) < 4 or tuple(b[2:4]) != WORD_TAG:
        raise ValueError(f"not a pattern word: {b!r}")
    return ((b[0] - 0x20) | ((b[1] - 0x20) << 6)) * 4


def leading_bytes(value):
    """The first 4 bytes of a field, from whatever its accessor returns."""
    if isinstance(value, bytes):
        return value[:4]
    if isinstance(value, int):
        return (value & 0xFFFFFFFF).to_bytes(4, "little")
    if isinstance(value, (list, tuple)):
        return leading_bytes(value[0])
    return None


def struct_layout(cls, base_fill=True):
    obj = cls()
    size = obj.c_sizeof()
    base = int(obj)
    buf = (ctypes.c_ubyte * size).from_address(base)
    pattern = b"".join(word_bytes(i) for i in range((size + 3) // 4))[:size]
    ctypes.memmove(base, pattern, size)
    fields = {}
    for name in obj.PROPERTIES():
        value = getattr(obj, name)
        first = leading_bytes(value)
        if first is None:
            # A nested struct or a pointer wrapper: nested structs point into the buffer, pointer fields hold
            # pattern bytes as their address.
            address = int(value)
            if base <= address < base + size:
                fields[name] = address - base
                continue
            first = leading_bytes(address)
        fields[name] = decode(first)
    assert bytes(buf) == pattern, "reading the fields changed the struct"
    return {"size": size, "fields": fields}


def enum_values(name):
    # __members__ holds aliases too (hipErrorMemoryAllocation is hipErrorOutOfMemory), which iterating skips.
    return {key: member.value for key, member in getattr(hip, name).__members__.items()}


PXD_FUNCTION = re.compile(r"^cdef (.+?)\s*\b(\w+)\((.*)\)(?: except\? \w+| noexcept)? nogil$")


def prototypes():
    pxd = os.path.join(os.path.dirname(hip.__file__), "chip.pxd")
    out = {}
    with open(pxd) as f:
        for line in f:
            m = PXD_FUNCTION.match(line.strip())
            if m:
                ret, name, params = m.groups()
                out[name] = {"ret": ret.strip(), "params": [p.strip() for p in params.split(",") if p.strip()]}
    return out


def main():
    from importlib.metadata import version

    report = {
        "hip_python": version("hip-python"),
        "hip_version_major": hip.HIP_VERSION_MAJOR,
        "hip_version_minor": hip.HIP_VERSION_MINOR,
        "structs": {
            "hipDeviceProp_tR0600": struct_layout(hip.hipDeviceProp_t),
            "hipDeviceArch_t": {"size": hip.hipDeviceArch_t().c_sizeof(), "fields": {}},
            "hipUUID": {"size": hip.hipUUID_t().c_sizeof(), "fields": {}},
        },
        "enums": {
            e: enum_values(e)
            for e in ["hipDeviceAttribute_t", "hipError_t", "hipFunction_attribute", "hipMemcpyKind", "hipStreamCaptureMode"]
        },
        "functions": prototypes(),
    }
    json.dump(report, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
