// The Redis Cluster slot of a key, computed here as the server does (CRC16-XMODEM of the key, or of its hash tag:
// the part between the first `{` and the next `}` when that part is not empty, modulo 16384), so a send that waits
// for its masters' replicas needs no CLUSTER KEYSLOT round trip to learn which masters those are.

const SLOTS = 16384;

/** CRC16 with polynomial 0x1021 and initial value 0 (XMODEM), one table lookup per byte. */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[byte] = crc & 0xffff;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] ?? 0);
  return crc;
}

/** The slot Redis Cluster gives `key` (its UTF-8 bytes, as ioredis sends a string key). */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % SLOTS;
  }
  return crc16(bytes) % SLOTS;
}
