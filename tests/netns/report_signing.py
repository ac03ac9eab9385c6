"""report_signing.py - what a forging member needs to sign peer reports as the agent does
(agent/cluster/report_signing.h), for the netns tests' hostile members: libsodium by ctypes,
no other module. Imported by the scripts those tests write next to a copy of it.

  signer(secret_z85)  sign(msg): msg with flags bit 2 (kFlagSigned) set, then the Ed25519
                      signature over every byte before it, by the signing key derived from
                      the member's CURVE secret (z85 text, as in agent keygen's .key)
  varint(n)           n as the wire format's unsigned LEB128 varint
"""
import ctypes
import ctypes.util
import hashlib
import sys

from zmq.utils import z85


def signer(secret_z85):
    sodium = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
    if sodium.sodium_init() < 0:
        sys.exit("cannot initialise libsodium")
    # Ed25519 from BLAKE2b(CURVE secret), keyed as the agent keys it.
    seed = hashlib.blake2b(z85.decode(secret_z85), digest_size=32, key=b"dthrottle report signing v1").digest()
    pk, sk = ctypes.create_string_buffer(32), ctypes.create_string_buffer(64)
    sodium.crypto_sign_seed_keypair(pk, sk, seed)

    def sign(msg):
        msg = msg[:5] + bytes([msg[5] | 4]) + msg[6:]
        sig = ctypes.create_string_buffer(64)
        sodium.crypto_sign_detached(sig, None, msg, ctypes.c_ulonglong(len(msg)), sk)
        return msg + sig.raw
    return sign


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out
