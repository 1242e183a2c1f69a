// The facts_shown an inbox item's page carries in its re-approve form (a hidden field): the fingerprint of the facts
// the page showed, which the form always sends back. Tests that post the form as a browser would read the page first.
import type { Express } from 'express';
import request from 'supertest';
import { expect } from 'vitest';

/** The facts_shown of `item`'s re-approve form, as the page draws it now for the session of `cookie`. */
export async function factsShownOnPage(app: Express, item: string, cookie: string): Promise<string> {
  const page = await request(app).get(`/ui/inbox/${item}`).set('Cookie', cookie);
  expect(page.status, page.text.slice(0, 300)).toBe(200);
  const shown = /<input type="hidden" name="facts_shown" value="([0-9a-f]{16})">/.exec(page.text)?.[1];
  if (shown === undefined) throw new Error(`The page of item ${item} has no re-approve form carrying facts_shown.`);
  return shown;
}
