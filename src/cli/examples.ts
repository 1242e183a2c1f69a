// The command lines each command's --help shows under "Example:": an operator copies them, so they are written as
// README's "The command line" writes them, with options the command takes, and placeholders only where the value is
// one the operator's own Stripe account or journal gives (a shell variable, said where it comes from). One table for
// every command, those src/main.ts adds included: it is applied to the whole program just before it runs.
import type { Command } from 'commander';

/** Example command lines by command path (`approvals grant`), each one shell line; a `#` comment says what it does. */
export const COMMAND_EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  serve: [
    'npx interlock serve   # every role, as npm start runs it (REDIS_URL and STRIPE_SECRET_KEY unset: a private Redis and the offline sandbox)',
    'npx interlock serve --roles worker   # one more worker for the running service (it joins it through .data/service.json)',
    'npx interlock serve --port 0 --concurrency 4   # the API on a free port (its start-up lines print it), at most 4 effects sent at once',
  ],
  sandbox: [
    'npx interlock sandbox   # at http://127.0.0.1:12111; prints the stripe listen and stripe trigger lines for it',
    'npx interlock sandbox --port 0 --delays fast   # on a free port (printed), every delay at most 200 ms',
    'npx interlock sandbox --forward-to http://127.0.0.1:3000/webhooks/stripe --webhook-secret whsec_local   # POSTs every event there, signed (a service with STRIPE_WEBHOOK_SECRET=whsec_local)',
  ],
  scenario: [
    'npx interlock scenario stripe-dispute --delays fast --rows crash_after_send_chargeback_during_outage --columns interlock   # one cell, in seconds; to .data/scenario-runs/<time>',
    'npx interlock scenario billing-credit --delays fast --columns interlock   # the gate\'s column of one scenario, in under a minute',
    'npx interlock scenario chaos --seed 7 --scale 0.1 --delays fast   # three serves, their Redis and Stripe failing under a few dozen requests; exit 1 if the contract broke',
  ],
  // Under the approvals `approvals grant --help` shows (ap_1 on payment:pi_123, ap_2 on customer:cus_123).
  refund: ['npx interlock refund --request case-1042 --payment-intent pi_123 --amount 2000 --approval ap_1 --reason "arrived damaged" --wait 15'],
  credit: ['npx interlock credit --request inc_7-cus_123 --customer cus_123 --amount 500 --incident inc_7 --approval ap_2 --description "Credit for the outage of 7 May" --wait 15'],
  case: ['npx interlock case --case 4472 --payment-intent pi_123 --story "The jar arrived cracked; the customer asks for the money back" --approval ap_1 --wait 20'],
  'case show': ['npx interlock case show 4472'],
  'effect show': ['npx interlock effect show --request case-1042', 'npx interlock effect show "$EFFECT_ID"   # the effectId refund or credit printed'],
  alerts: ['npx interlock alerts', 'npx interlock alerts --all --json'],
  'alerts resolve': ['npx interlock alerts resolve "$ALERT_ID" --by lee@support   # ALERT_ID: <kind>:<effect id>, as `interlock alerts` prints it'],
  recover: ['npx interlock recover'],
  reconcile: ['npx interlock reconcile --since 72h'],
  'keys generate': [
    'npx interlock keys generate   # at INTERLOCK_SIGNING_KEY_FILE, or DATA_DIR/keys/signing-key.pem',
    'npx interlock keys generate --out /etc/interlock/signing-key-2.pem   # a new key for a rotation',
  ],
  'keys adopt': [
    'npx interlock keys adopt   # says what it would change, and changes nothing',
    'npx interlock keys adopt --yes   # with INTERLOCK_SIGNING_KEY_FILE set to the new key, after the old one leaked',
  ],
  'keys public': ['npx interlock keys public > public-key.pem', 'npx interlock keys public --key /etc/interlock/signing-key.pem >> /etc/interlock/retired-keys.pem'],
  'receipt export': [
    'npx interlock receipt export "$EFFECT_ID" --out receipt.json   # the effectId refund or credit printed; a new file',
    'npx interlock receipt export "$EFFECT_ID" "$OTHER_EFFECT_ID" --dir receipts   # one file each; run again to refresh them',
  ],
  'receipt verify': [
    'npx interlock receipt verify tests/fixtures/receipts/failed-refund.json --public-key tests/fixtures/receipts/public-key.pem   # in a checkout',
    'npx interlock receipt verify receipts/*.json --public-key public-key.pem   # several: one JSON line each',
  ],
  'approvals grant': [
    'npx interlock approvals grant --id ap_1 --approver dana@support --cap-cents 3000 --scope payment:pi_123',
    'npx interlock approvals grant --id ap_2 --approver dana@support --cap-cents 500 --scope customer:cus_123 --max-uses 2 --expires-in 86400',
  ],
  'approvals revoke': ['npx interlock approvals revoke ap_1 --by lee@support'],
  'approvals describe': ['npx interlock approvals describe ap_1'],
  'caps set': ['npx interlock caps set payment:pi_123 3000   # all agents together move at most $30 on this payment', 'npx interlock caps set customer:cus_123 0   # nothing may move on this customer'],
  'inbox list': ['npx interlock inbox list', 'npx interlock inbox list --closed --kind ambiguous --limit 10'],
  'inbox show': ['npx interlock inbox show "$ITEM_ID"   # ITEM_ID: <kind>:<effect id>, as `interlock inbox list` prints it'],
  'inbox reapprove': ['npx interlock inbox reapprove "$ITEM_ID" --approval ap_3 --by dana@support --note "the customer confirmed the new amount"'],
  'inbox resolve': ['npx interlock inbox resolve "$ITEM_ID" --landed --note "re_123 shows in the Stripe dashboard" --by lee@support'],
  'inbox dismiss': ['npx interlock inbox dismiss "$ITEM_ID" --note "a duplicate of another ticket" --by lee@support'],
  demo: ['npx interlock demo'],
};

/** The command at `path` (`approvals grant`) under `program`, or null. */
export function commandAt(program: Command, path: string): Command | null {
  let command: Command | undefined = program;
  for (const name of path.split(' ')) command = command?.commands.find((sub) => sub.name() === name);
  return command ?? null;
}

/** Adds each command's examples (COMMAND_EXAMPLES) after its --help. A path no command has is skipped. */
export function addExamples(program: Command): void {
  for (const [path, lines] of Object.entries(COMMAND_EXAMPLES)) {
    commandAt(program, path)?.addHelpText('after', `\n${lines.length === 1 ? 'Example' : 'Examples'}:\n${lines.map((line) => `  ${line}`).join('\n')}`);
  }
}
