// What a dashboard page is: a name in the navigation, the fragment path it answers
// (#/customers/...), and how it renders into the main area with the signed-in token.
import type { Environment, Token } from './api.js';

export interface PageContext {
  token: Token;
  environment: Environment;
  /** The page's area; the page replaces what it shows. */
  main: HTMLElement;
  /** The fragment's segments after the page's own (`#/customers/Customer:1` → `['Customer:1']`), decoded. */
  params: readonly string[];
  /** Goes to another page (`navigate('customers', id)`), as a link would. */
  navigate(...segments: string[]): void;
}

export interface DashboardPage {
  /** The navigation's label, and the page's heading. */
  name: string;
  /** The fragment's first segment. */
  path: string;
  /** Shown only to sandbox tokens. */
  sandboxOnly?: boolean;
  render(ctx: PageContext): Promise<void>;
}

/** The fragment for a page and its parameters, each segment encoded. */
export function hashOf(...segments: string[]): string {
  return `#/${segments.map(encodeURIComponent).join('/')}`;
}
