// The sealer: gathers the batches sealed during one turn of the event loop and signs them as one tree
// (src/core/seal.ts). A worker with many effects in flight seals their batches in bursts (the replies of one Redis
// read resume many submits at once), so one Ed25519 signature, on this thread or the signing thread, covers up to
// SEAL_MAX_LEAVES batches. A lone batch waits only for the end of the current turn (setImmediate), not for others.
import { SEAL_MAX_LEAVES, buildTree, formatSeal, leafHash, sealMessage, type SealDomain } from '../core/seal.js';
import type { Signer } from '../core/signing.js';

export type Sealer = {
  kid: string;
  /** The seal of one leaf text (a batch's last entry hash), once its tree is signed. */
  seal(text: string): Promise<string>;
};

type Waiting = { leaf: Buffer; resolve(seal: string): void; reject(error: Error): void };

export function createSealer(signer: Signer, options: { domain: SealDomain; maxLeaves?: number }): Sealer {
  const maxLeaves = Math.max(1, Math.min(options.maxLeaves ?? SEAL_MAX_LEAVES, SEAL_MAX_LEAVES));
  let waiting: Waiting[] = [];
  let scheduled = false;

  function signTree(tree: Waiting[]): void {
    const { root, paths } = buildTree(tree.map((item) => item.leaf));
    signer.sign(sealMessage(options.domain, tree.length, root)).then(
      (signature) => tree.forEach((item, index) => item.resolve(formatSeal({ size: tree.length, index, path: paths[index] ?? [], signature }))),
      (error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        for (const item of tree) item.reject(failure);
      },
    );
  }

  function flush(): void {
    scheduled = false;
    const all = waiting;
    waiting = [];
    for (let at = 0; at < all.length; at += maxLeaves) signTree(all.slice(at, at + maxLeaves));
  }

  return {
    kid: signer.kid,
    seal(text) {
      return new Promise<string>((resolve, reject) => {
        waiting.push({ leaf: leafHash(text), resolve, reject });
        if (waiting.length >= maxLeaves) {
          // A full tree goes at once; what follows in this turn starts the next one.
          const full = waiting;
          waiting = [];
          signTree(full);
        } else if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}
