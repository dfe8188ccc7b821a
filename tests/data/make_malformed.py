#!/usr/bin/env python3
"""make_malformed.py FIXTURES_DIR: regenerates the committed malformed
inputs in tests/data/ from real nvcc output (tests/fixtures). Each file is
small and breaks one rule a reader must check; test_binfmt.c expects a
CBC_E_FORMAT naming the file and an offset for every one of them."""
import os, struct, sys

fx = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
cubin = open(os.path.join(fx, 'k.sm_90.cubin'), 'rb').read()
fat = open(os.path.join(fx, 'k.none.fatbin'), 'rb').read()
zfat = open(os.path.join(fx, 'k.size.fatbin'), 'rb').read()
lfat = open(os.path.join(fx, 'k.speed.fatbin'), 'rb').read()

def put(name, data):
    with open(os.path.join(here, name), 'wb') as f:
        f.write(data)

# cubin: cut inside the section header table
shoff = struct.unpack_from('<Q', cubin, 40)[0]
put('truncated.cubin', cubin[:shoff + 100])
# cubin: e_shnum claims far more headers than the file holds
b = bytearray(cubin); struct.pack_into('<H', b, 60, 4000); put('lying_shnum.cubin', bytes(b))
# cubin: the section name table's size points past the end
b = bytearray(cubin); shstr = struct.unpack_from('<H', b, 62)[0]
struct.pack_into('<Q', b, shoff + 64 * shstr + 32, 1 << 40); put('lying_section.cubin', bytes(b))
# cubin: 32-bit class
b = bytearray(cubin[:64]); b[4] = 1; put('elf32.cubin', bytes(b))
# too short to be an ELF header
put('tiny.cubin', cubin[:40])
# fatbin: wrong magic
b = bytearray(fat[:256]); struct.pack_into('<I', b, 0, 0xDEADBEEF); put('wrong_magic.fatbin', bytes(b))
# fatbin: container claims more bytes than follow
put('lying_size.fatbin', fat[:512])
# fatbin: first entry's payload size runs past the container
b = bytearray(fat[:1024]); struct.pack_into('<Q', b, 8, 1024 - 16)
struct.pack_into('<Q', b, 16 + 8, 1 << 32); put('lying_entry.fatbin', bytes(b))
# fatbin: entry header size below 64
b = bytearray(fat[:4096]); struct.pack_into('<Q', b, 8, 4096 - 16)
struct.pack_into('<I', b, 16 + 4, 8); put('short_entry.fatbin', bytes(b))
# fatbin: a zstd payload with its bytes damaged (first entry), everything else intact
b = bytearray(zfat); hs = struct.unpack_from('<I', b, 16 + 4)[0]
for i in range(16 + hs + 20, 16 + hs + 60): b[i] ^= 0x5A
put('bad_zstd.fatbin', bytes(b))
# fatbin: an LZ4 PTX entry whose uncompressed size lies
b = bytearray(lfat); e = 16
while struct.unpack_from('<H', b, e)[0] != 1:
    e += struct.unpack_from('<I', b, e + 4)[0] + struct.unpack_from('<Q', b, e + 8)[0]
struct.pack_into('<Q', b, e + 56, struct.unpack_from('<Q', b, e + 56)[0] + 100)
put('lying_lz4.fatbin', bytes(b))
