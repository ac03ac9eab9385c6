#!/usr/bin/env python3
"""pcapng_comments.py FILE - one line per packet of a pcapng file: its comment (opt_comment
of the Enhanced Packet Block), or "-" for none. For tests/netns/test_capture.sh: tcpdump
reads the packets but does not print pcapng comments."""
import struct
import sys


def comments(data):
    if len(data) < 12 or struct.unpack_from('<I', data, 0)[0] != 0x0A0D0D0A:
        raise SystemExit('not a pcapng file')
    endian = '<' if struct.unpack_from('<I', data, 8)[0] == 0x1A2B3C4D else '>'
    pos = 0
    while pos + 12 <= len(data):
        btype, blen = struct.unpack_from(endian + 'II', data, pos)
        if blen < 12 or pos + blen > len(data):
            raise SystemExit(f'a block at {pos} runs past the end of the file (a cut-off write)')
        if btype == 6:  # Enhanced Packet Block
            cap = struct.unpack_from(endian + 'I', data, pos + 20)[0]
            opt = pos + 28 + (cap + 3) // 4 * 4
            found = '-'
            while opt + 4 <= pos + blen - 4:
                code, olen = struct.unpack_from(endian + 'HH', data, opt)
                if code == 0:
                    break
                if code == 1:
                    found = data[opt + 4:opt + 4 + olen].decode('utf-8', 'replace')
                opt += 4 + (olen + 3) // 4 * 4
            yield found
        pos += blen


if __name__ == '__main__':
    with open(sys.argv[1], 'rb') as f:
        for c in comments(f.read()):
            print(c)
