// The sealer: gathers the batches sealed during one turn of the event loop (src/coalesce.ts) and signs them as one
// tree (src/core/seal.ts). A worker with many effects in flight seals their batches in bursts (the replies of one Redis
// read resume many submits at once), so one Ed25519 signature, on this thread or the signing thread, covers up to
// SEAL_MAX_LEAVES batches. A lone batch waits only for the end of the current turn (setImmediate), not for others.
import { SEAL_MAX_LEAVES, buildTree, formatSeal, leafHash, sealMessage, type Digest, type SealDomain } from '../core/seal.js';
import type { Signer } from '../core/signing.js';
import { createCoalescer } from '../coalesce.js';

export type Sealer = {
  kid: string;
  /** The seal of one leaf text (a batch's last entry hash), once its tree is signed. */
  seal(text: string): Promise<string>;
};

export function createSealer(signer: Signer, options: { domain: SealDomain; maxLeaves?: number }): Sealer {
  const maxLeaves = Math.max(1, Math.min(options.maxLeaves ?? SEAL_MAX_LEAVES, SEAL_MAX_LEAVES));
  const trees = createCoalescer<Digest, string>(
    async (leaves) => {
      const { root, paths } = buildTree(leaves);
      const signature = await signer.sign(sealMessage(options.domain, leaves.length, root));
      return paths.map((path, index) => formatSeal({ size: leaves.length, index, path, signature }));
    },
    { maxBatch: maxLeaves },
  );
  return { kid: signer.kid, seal: (text) => trees.submit(leafHash(text)) };
}
