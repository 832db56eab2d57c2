"""A small MetaImage (.mha / .mhd + raw) reader and writer for numpy arrays.

Enough of the format for exchanging scalar images of every gpix dtype with `gpix run`:
uncompressed or zlib-compressed data, LOCAL or a separate data file, either byte order.
Arrays are numpy (z, y, x); MetaImage's DimSize is x first.
"""
import os
import zlib

import numpy as np

# numpy dtype name -> MetaImage element type written for it.
WRITE_TYPES = {
    "uint8": "MET_UCHAR", "int8": "MET_CHAR", "uint16": "MET_USHORT", "int16": "MET_SHORT",
    "uint32": "MET_UINT", "int32": "MET_INT", "uint64": "MET_ULONG_LONG",
    "int64": "MET_LONG_LONG", "float32": "MET_FLOAT", "float64": "MET_DOUBLE",
}
# MetaImage element type -> numpy dtype read. MetaIO's MET_LONG / MET_ULONG are 4 bytes (ITK
# writes 64-bit integers as MET_LONG_LONG / MET_ULONG_LONG).
READ_TYPES = {
    "MET_UCHAR": "uint8", "MET_CHAR": "int8", "MET_USHORT": "uint16", "MET_SHORT": "int16",
    "MET_UINT": "uint32", "MET_INT": "int32", "MET_ULONG": "uint32", "MET_LONG": "int32",
    "MET_ULONG_LONG": "uint64", "MET_LONG_LONG": "int64", "MET_FLOAT": "float32",
    "MET_DOUBLE": "float64",
}


def write_mha(path, array):
    """Writes a 1D-3D numpy array as one .mha file (header and data in one file)."""
    a = np.ascontiguousarray(array)
    if a.dtype.name not in WRITE_TYPES:
        raise ValueError(f"no MetaImage type for {a.dtype}")
    if not 1 <= a.ndim <= 3:
        raise ValueError(f"MetaImage here takes 1-3 dimensions, not {a.ndim}")
    dims = " ".join(str(n) for n in reversed(a.shape))
    header = (
        "ObjectType = Image\n"
        f"NDims = {a.ndim}\n"
        "BinaryData = True\n"
        "BinaryDataByteOrderMSB = False\n"
        "CompressedData = False\n"
        f"DimSize = {dims}\n"
        f"ElementType = {WRITE_TYPES[a.dtype.name]}\n"
        "ElementDataFile = LOCAL\n"
    )
    with open(path, "wb") as f:
        f.write(header.encode("ascii"))
        f.write(a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes())


def read_mha(path):
    """Reads a .mha or .mhd file into a numpy array of shape (z, y, x) (as many axes as NDims)."""
    with open(path, "rb") as f:
        blob = f.read()
    fields = {}
    pos = 0
    while True:
        end = blob.index(b"\n", pos)
        line = blob[pos:end].decode("ascii", "replace").strip()
        pos = end + 1
        if not line or "=" not in line:
            continue
        key, value = (s.strip() for s in line.split("=", 1))
        fields[key] = value
        if key == "ElementDataFile":
            break
    ndims = int(fields["NDims"])
    dims = [int(v) for v in fields["DimSize"].split()][:ndims]
    if int(fields.get("ElementNumberOfChannels", "1")) != 1:
        raise ValueError(f"{path}: {fields['ElementNumberOfChannels']} channels")
    dtype = np.dtype(READ_TYPES[fields["ElementType"]])
    msb = fields.get("BinaryDataByteOrderMSB", fields.get("ElementByteOrderMSB", "False"))
    dtype = dtype.newbyteorder(">" if msb.lower() == "true" else "<")
    source = fields["ElementDataFile"]
    if source == "LOCAL":
        data = blob[pos:]
    else:
        with open(os.path.join(os.path.dirname(path), source), "rb") as f:
            data = f.read()
    if fields.get("CompressedData", "False").lower() == "true":
        data = zlib.decompress(data)
    count = int(np.prod(dims))
    a = np.frombuffer(data, dtype=dtype, count=count)
    return a.reshape(tuple(reversed(dims))).astype(dtype.newbyteorder("="))
