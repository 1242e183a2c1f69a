// The page's session for a test: signed in as a browser signs in (POST /ui/sign-in from the page's own origin). The
// cookie holds a session of the app that opened it, never the token, so a test cannot make one up; each app signs each
// token in once.
import type { Express } from 'express';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { csrfTokenFor } from '../../webhooks/ui/session.js';

export type PageSession = {
  /** The cookie's value: the session. */
  value: string;
  /** A Cookie header holding it. */
  cookie: string;
  /** The session's CSRF token, as its pages' forms carry it. */
  csrf: string;
};

export async function signIn(app: Express, token: string): Promise<PageSession> {
  const answer = await request(app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').send({ token });
  const lines: string[] = ([] as string[]).concat(answer.headers['set-cookie'] ?? []);
  const raw = lines.map((line) => /^interlock_session=([^;]+)/.exec(line)?.[1]).find((value) => value !== undefined);
  if (answer.status !== 303 || raw === undefined) throw new Error(`Signing in to the page answered ${answer.status} with no session cookie: ${answer.text.slice(0, 300)}`);
  const value = decodeURIComponent(raw);
  return { value, cookie: `interlock_session=${raw}`, csrf: csrfTokenFor(value) };
}

const opened = new WeakMap<Express, Map<string, Promise<PageSession>>>();

/** The session of `token` on `app`, signed in on first use and kept for the app's other tests. */
export function pageSession(app: Express, token: string): Promise<PageSession> {
  const sessions = opened.get(app) ?? new Map<string, Promise<PageSession>>();
  opened.set(app, sessions);
  let session = sessions.get(token);
  if (session === undefined) {
    session = signIn(app, token);
    sessions.set(token, session);
    // A sign-in that failed is tried again by the next test, not handed to it.
    session.catch(() => sessions.delete(token));
  }
  return session;
}

/** Signs `token` in as a person does in a browser: the page at `base` opened, the form filled and sent, back at /ui. */
export async function signInInBrowser(page: Page, base: string, token: string, from = '/ui'): Promise<void> {
  await page.goto(`${base}${from}`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${base}/ui`);
}
