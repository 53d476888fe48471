"""The checksums the audio containers carry: FLAC's CRC-8 and CRC-16 and Ogg's CRC-32 (all MSB-first,
no reflection, so neither ``zlib.crc32`` nor ``binascii`` computes them)."""

from __future__ import annotations


def _table(poly: int, width: int) -> tuple[int, ...]:
    top = 1 << (width - 1)
    mask = (1 << width) - 1
    out = []
    for byte in range(256):
        crc = byte << (width - 8)
        for _ in range(8):
            crc = ((crc << 1) ^ poly) if crc & top else (crc << 1)
        out.append(crc & mask)
    return tuple(out)


_CRC8 = _table(0x07, 8)
_CRC16 = _table(0x8005, 16)
_CRC32 = _table(0x04C11DB7, 32)


def crc8(data: bytes) -> int:
    """FLAC's frame-header CRC-8 (polynomial 0x07, initial 0)."""
    crc = 0
    for b in data:
        crc = _CRC8[crc ^ b]
    return crc


def crc16(data: bytes) -> int:
    """FLAC's frame CRC-16 (polynomial 0x8005, initial 0)."""
    crc = 0
    table = _CRC16
    for b in data:
        crc = ((crc << 8) & 0xFFFF) ^ table[(crc >> 8) ^ b]
    return crc


def ogg_crc(data: bytes) -> int:
    """Ogg's page CRC-32 (polynomial 0x04C11DB7, initial 0, no final XOR)."""
    crc = 0
    table = _CRC32
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ table[(crc >> 24) ^ b]
    return crc
