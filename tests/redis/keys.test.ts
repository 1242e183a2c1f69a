// Redis Cluster runs a script only when all its keys hash to one slot. The slot of a key is CRC16 (XMODEM) of its
// hash tag modulo 16384; these tests compute it for every key set a script is given.
import { describe, expect, it } from 'vitest';
import { createKeys, assertPartition } from '../../src/redis/keys.js';

function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function slot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key.slice(open + 1, close)) % 16384;
  }
  return crc16(key) % 16384;
}

describe('Redis keys', () => {
  const keys = createKeys('interlock');
  const eid = 'a'.repeat(64);

  it('computes Redis Cluster slots like Redis does', () => {
    expect(crc16('123456789')).toBe(0x31c3);
    expect(slot('foo')).toBe(12182);
    expect(slot('{user1000}.following')).toBe(slot('{user1000}.followers'));
  });

  it('puts every key of each partition script in one cluster slot, and the global indexes in another', () => {
    const partition = 'payment:pi_123';
    const scriptKeys = [keys.state(partition, eid), keys.entries(partition, eid), keys.approval(partition, 'ap_1'), keys.approvalOpen(partition, 'ap_1'), keys.subject(partition)];
    expect(new Set(scriptKeys.map(slot)).size).toBe(1);
    expect(new Set([keys.effectPartitions, keys.effectsByTime, keys.openIndex, keys.watch, keys.approvalPartitions, keys.alerts, keys.alertsByTime].map(slot)).size).toBe(1);
  });

  it('no approval id can address another key: an id spelled like a key of another family is just that id (issue 6, item 5)', () => {
    const partition = 'payment:pi_x';
    const families = (id: string) => [keys.approval(partition, id), keys.approvalOpen(partition, id)];
    const others = [keys.subject(partition), keys.state(partition, eid), keys.entries(partition, eid), ...families('ap_x')];
    for (const hostile of ['ap_x:reserved', 'ap_x:open', 'ap_x-open', 'open:ap_x', 'x:approval-open:ap_x', 'ap_x:', ':', 'subject', `state:${eid}`]) {
      for (const key of families(hostile)) expect(others, `${hostile} -> ${key}`).not.toContain(key);
    }
    expect(() => keys.approval(partition, 'ap_1}{payment:pi_y')).toThrow(/not an approval id/);
    expect(() => keys.state(partition, 'not-an-effect-id')).toThrow(/not an effect id/);
  });

  it('spreads different subjects over different slots', () => {
    const slots = new Set(Array.from({ length: 50 }, (_, i) => slot(keys.state(`payment:pi_${i}`, eid))));
    expect(slots.size).toBeGreaterThan(40);
  });

  it('refuses a partition that would break the hash tag', () => {
    expect(() => assertPartition('payment:{pi_1}')).toThrow(/hash tag/);
    expect(() => assertPartition('')).toThrow();
  });
});
