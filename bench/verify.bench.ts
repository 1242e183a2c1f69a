// verify() against the raw Ed25519 verification rate of this machine, for the same number of signatures (issue 8
// §2): everything verify() does besides the signatures (parsing, rehashing, the rules) must cost at most a tenth
// of them, so verify reaches ≥ 0.9× the raw rate. Measured side by side in one process, interleaved.
import { verify as cryptoVerify } from 'node:crypto';
import { buildReceipt, type Receipt } from '../src/core/receipt.js';
import { sealBatch, type AnyDraft, type Entry } from '../src/core/entries.js';
import { effectIdFor } from '../src/core/effect-id.js';
import { publicKeySet, signingKeyFromPem } from '../src/core/signing.js';
import { verify } from '../src/core/verify.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { finish, markdownTable, median, QUICK, round } from './support.js';

const { privatePem, publicPem } = generateSigningKeyPem();
const key = signingKeyFromPem(privatePem);
const keys = publicKeySet([publicPem]);
const REPS = QUICK ? 1 : 7;

/** A committed refund as the gate writes it, plus `observed` OBSERVED entries appended one by one (each signed). */
function receiptWith(observed: number): Receipt {
  const effect = { kind: 'refund', paymentIntent: 'pi_verify', amount: 2_000, reason: 'requested_by_customer' };
  const effectId = effectIdFor({ requestId: `verify-${observed}`, effect });
  const snapshot = { id: 'ap_verify', approver: 'dana@support', capCents: 5_000, expiresAt: 4e12, maxUses: 5, scope: 'payment:pi_verify', revoked: false, revokedAt: null, reservedCents: null, uses: null };
  const premises = { chargebacks: [], refunded_by_others: 0 };
  const checks = { approvalLive: true, approval: null, approvalProblems: [], violations: [], changes: [] };
  let at = 1_800_000_000_000;
  const entries: Entry[] = sealBatch(
    [
      { kind: 'PROPOSED', agent: 'support-bot', approval: 'ap_verify', premises, effect, request: null, decision: null },
      { kind: 'AUTHORIZED', approval: snapshot },
      { kind: 'DISPATCHED', subject: 'payment:pi_verify', approval: 'ap_verify', premises, checks, owner: 'w1', epoch: 1, sendDeadline: at + 30_000 },
    ],
    { effectId, at, prev: null },
    key,
  );
  const append = (draft: AnyDraft) => {
    at += 1;
    entries.push(...sealBatch([draft], { effectId, at, prev: entries.at(-1)?.hash ?? null }, key));
  };
  append({ kind: 'COMMITTED', via: 'send', result: { id: 're_verify', object: 'refund', status: 'succeeded', amount: 2_000, charge: 'ch_verify' }, found: 're_verify', rechecked: null, epoch: 1 });
  for (let i = 0; i < observed; i += 1) {
    append({ kind: 'OBSERVED', source: 'webhook', eventId: `evt_${i}`, eventType: 'refund.updated', objectType: 'refund', objectId: 're_verify', status: 'succeeded', failureReason: null, amount: 2_000, charge: 'ch_verify', disputeStatus: null, disputeReason: null, created: 1_800_000_000 + i });
  }
  return buildReceipt(effectId, entries, key, at + 1);
}

/** The signatures verify() checks for a receipt: each signed entry's, and the head's. */
function signaturesOf(receipt: Receipt): { data: Buffer; sig: Buffer }[] {
  const out = receipt.entries.filter((entry) => entry.sig !== null).map((entry) => ({ data: Buffer.from(entry.hash, 'utf8'), sig: Buffer.from(entry.sig ?? '', 'base64url') }));
  // The head's text is internal to receipt.ts; an entry-sized message stands in for it (same cost).
  out.push({ data: Buffer.from(receipt.head.lastHash ?? '', 'utf8'), sig: Buffer.from(receipt.head.sig, 'base64url') });
  return out;
}

type Case = { name: string; receipt: Receipt; runs: number };

function measureCase(test: Case): { verifyPerSecond: number; rawPerSecond: number; ratio: number; entriesPerSecond: number; signatures: number } {
  const json = JSON.parse(JSON.stringify(test.receipt)) as unknown;
  const sigs = signaturesOf(test.receipt);
  const publicKey = keys.values().next().value;
  if (!publicKey) throw new Error('no public key');
  const verifyTimes: number[] = [];
  const rawTimes: number[] = [];
  for (let rep = 0; rep < REPS; rep += 1) {
    let started = performance.now();
    for (let i = 0; i < test.runs; i += 1) {
      const result = verify(json, { publicKeys: keys });
      if (result.valid !== true) throw new Error(`${test.name} does not verify: ${result.problems.join('; ')}`);
    }
    verifyTimes.push(performance.now() - started);
    started = performance.now();
    for (let i = 0; i < test.runs; i += 1) for (const { data, sig } of sigs) cryptoVerify(null, data, publicKey, sig);
    rawTimes.push(performance.now() - started);
  }
  const verifyMs = median(verifyTimes);
  const rawMs = median(rawTimes);
  return {
    signatures: sigs.length,
    verifyPerSecond: Math.round((test.runs * 1000) / verifyMs),
    rawPerSecond: Math.round((test.runs * 1000) / rawMs),
    ratio: round(rawMs / verifyMs, 2),
    entriesPerSecond: Math.round((test.runs * test.receipt.entries.length * 1000) / verifyMs),
  };
}

const cases: Case[] = [
  { name: 'a committed refund (4 entries, 2 signatures + head)', receipt: receiptWith(0), runs: QUICK ? 100 : 2_000 },
  { name: 'a refund with 200 facts appended (204 entries, 202 signatures + head)', receipt: receiptWith(200), runs: QUICK ? 2 : 20 },
];
const rows = cases.map((test) => ({ case: test.name, entries: test.receipt.entries.length, ...measureCase(test) }));
const table = markdownTable(
  ['receipt', 'entries', 'signatures checked', 'verify() receipts/s', 'raw Ed25519 for the same signatures, receipts/s', 'verify / raw', 'entries/s'],
  rows.map((row) => [row.case, row.entries, row.signatures, row.verifyPerSecond, row.rawPerSecond, row.ratio, row.entriesPerSecond]),
);
const long = rows[1];
// What one signature check costs here, from the raw column: the bound on entries/s when every entry is signed.
const usPerSignature = long === undefined ? NaN : round(1e6 / (long.rawPerSecond * long.signatures), 1);
const entriesBound = Math.round(1e6 / usPerSignature);
const markdown = `One process, medians of ${REPS} runs, verify() and the raw node:crypto Ed25519 checks of the same signatures interleaved.\n\n${table}\n\nOne Ed25519 verification costs ${usPerSignature} µs on this machine, so a receipt whose facts are appended one signed entry at a time (as the facts worker does) cannot verify faster than about ${entriesBound.toLocaleString('en-US')} entries/s on one core, whatever verify() does besides; \`interlock receipt verify FILE ...\` spreads files over every core.`;
console.log(`\n${markdown}`);
const targets = [
  ...rows.map((row) => ({ target: `verify() ≥ 0.9× raw Ed25519 for the same signatures: ${row.case}`, value: row.ratio, met: row.ratio >= 0.9 })),
  ...rows.map((row) => ({ target: `verify() ≥ 50,000 entries/s: ${row.case}`, value: row.entriesPerSecond, met: row.entriesPerSecond >= 50_000 })),
];
finish('verify', 'Receipt verification (issues 8 §2, 12 §5)', markdown, { rows, usPerSignature, entriesBound }, targets);
