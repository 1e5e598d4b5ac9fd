// Config: the environment's configuration (GET /config) as a form. "Save" sends PATCH
// /config with only the values that changed, and each problem the API names in
// `details[].field` (a dotted path such as `embeddedWalletConfig.otpLength`) is shown
// beside its input, tied to it by aria-describedby.
import { ApiError, call, describe, type Token } from '../api.js';
import { h, show } from '../dom.js';
import type { DashboardPage, PageContext } from '../page.js';

interface SupportedCurrency {
  currencyCode: string;
  minAmount: number;
  maxAmount: number;
}

interface PlatformConfig {
  umaDomain: string;
  webhookEndpoint: string;
  supportedCurrencies: SupportedCurrency[];
  embeddedWalletConfig: {
    appName: string;
    otpLength: number;
    expirationSeconds: number;
    sendFromEmailAddress: string;
    sendFromEmailSenderName: string;
    sessionLifetimeSeconds: number;
    webauthn: { rpId: string; rpName: string; origins: string[] };
  };
}

/** The passkey settings: the relying party, and the origins (separated by spaces in the form) ceremonies may come from. */
const PASSKEY_FIELDS: ReadonlyArray<{ name: 'rpId' | 'rpName' | 'origins'; label: string }> = [
  { name: 'rpId', label: 'Passkey relying party ID (a domain)' },
  { name: 'rpName', label: 'Passkey relying party name' },
  { name: 'origins', label: 'Passkey origins (separated by spaces)' },
];

/** One input of the form: the API's field path, its label, and the value it was loaded with. */
interface Field {
  path: string;
  label: string;
  loaded: string;
  integer: boolean;
  input: HTMLInputElement;
  problem: HTMLElement;
}

const WALLET_FIELDS: ReadonlyArray<{ name: Exclude<keyof PlatformConfig['embeddedWalletConfig'], 'webauthn'>; label: string; integer: boolean }> = [
  { name: 'appName', label: 'Wallet app name', integer: false },
  { name: 'otpLength', label: 'One-time code length (digits)', integer: true },
  { name: 'expirationSeconds', label: 'One-time code validity (seconds)', integer: true },
  { name: 'sendFromEmailAddress', label: 'Send one-time codes from (email address)', integer: false },
  { name: 'sendFromEmailSenderName', label: 'Sender name of one-time code emails', integer: false },
  { name: 'sessionLifetimeSeconds', label: 'Wallet session lifetime (seconds)', integer: true },
];

export const configPage: DashboardPage = { name: 'Config', path: 'config', render: configuration };

async function configuration({ token, main }: PageContext): Promise<void> {
  show(main, h('h2', {}, 'Config'), h('p', {}, 'Loading…'));
  showForm(token, main, await call<PlatformConfig>(token, 'GET', '/config'), '');
}

function showForm(token: Token, main: HTMLElement, config: PlatformConfig, notice: string): void {
  const fields: Field[] = [];
  const field = (path: string, label: string, loaded: string | number, integer = false): HTMLElement => {
    const id = `config-${path.replaceAll('.', '-')}`;
    const problem = h('p', { id: `${id}-problem`, role: 'alert', class: 'field-problem' });
    const input = h('input', { id, name: path, type: 'text', inputmode: integer ? 'numeric' : undefined, value: String(loaded), 'aria-describedby': problem.id });
    fields.push({ path, label, loaded: String(loaded), integer, input, problem });
    return h('div', { class: 'field' }, h('label', { for: id }, label), input, problem);
  };
  const passkeys = config.embeddedWalletConfig.webauthn;
  const passkeyField = ({ name, label }: (typeof PASSKEY_FIELDS)[number]): HTMLElement =>
    field(`embeddedWalletConfig.webauthn.${name}`, label, name === 'origins' ? passkeys.origins.join(' ') : passkeys[name]);
  const currencyRows = config.supportedCurrencies.map((currency, index) =>
    h(
      'fieldset',
      {},
      h('legend', {}, currency.currencyCode),
      field(`supportedCurrencies.${index}.minAmount`, `${currency.currencyCode} minimum amount (smallest unit)`, currency.minAmount, true),
      field(`supportedCurrencies.${index}.maxAmount`, `${currency.currencyCode} maximum amount (smallest unit)`, currency.maxAmount, true),
    ),
  );
  const general = h('p', { role: 'alert' });
  const saved = h('p', { role: 'status' }, notice);
  const form = h(
    'form',
    { 'aria-label': 'Configuration', novalidate: true },
    h('h3', {}, 'Webhooks and UMA'),
    field('webhookEndpoint', 'Webhook endpoint URL', config.webhookEndpoint),
    field('umaDomain', 'UMA domain', config.umaDomain),
    h('h3', {}, 'Supported currencies and their limits'),
    ...currencyRows,
    h('h3', {}, 'Embedded wallet'),
    ...WALLET_FIELDS.map(({ name, label, integer }) => field(`embeddedWalletConfig.${name}`, label, config.embeddedWalletConfig[name], integer)),
    h('h3', {}, 'Passkeys'),
    ...PASSKEY_FIELDS.map(passkeyField),
    h('button', { type: 'submit' }, 'Save'),
    general,
    saved,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    for (const { input, problem } of fields) {
      input.removeAttribute('aria-invalid');
      show(problem);
    }
    show(general);
    show(saved);
    call<PlatformConfig>(token, 'PATCH', '/config', patchOf(fields, config)).then(
      (updated) => showForm(token, main, updated, 'Saved.'),
      (err: unknown) => showProblems(err, fields, general),
    );
  });
  show(main, h('h2', {}, 'Config'), form);
}

/** The PATCH body: only what changed; the currency list whole when any limit changed (a listed currency keeps what it is not given). */
function patchOf(fields: readonly Field[], config: PlatformConfig): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const wallet: Record<string, unknown> = {};
  const webauthn: Record<string, unknown> = {};
  let currenciesChanged = false;
  for (const { path, loaded, integer, input } of fields) {
    if (input.value === loaded) continue;
    const [head, name, member] = path.split('.');
    if (head === 'supportedCurrencies') currenciesChanged = true;
    else if (name === 'webauthn') webauthn[member!] = member === 'origins' ? wordsOf(input.value) : input.value.trim();
    else if (head === 'embeddedWalletConfig') wallet[name!] = typed(input.value, integer);
    else body[path] = input.value.trim();
  }
  if (Object.keys(webauthn).length > 0) wallet['webauthn'] = webauthn;
  if (Object.keys(wallet).length > 0) body['embeddedWalletConfig'] = wallet;
  if (currenciesChanged) {
    const valueOf = (path: string): unknown => typed(fields.find((candidate) => candidate.path === path)!.input.value, true);
    body['supportedCurrencies'] = config.supportedCurrencies.map((currency, index) => ({
      currencyCode: currency.currencyCode,
      minAmount: valueOf(`supportedCurrencies.${index}.minAmount`),
      maxAmount: valueOf(`supportedCurrencies.${index}.maxAmount`),
    }));
  }
  return body;
}

/** The words of a text: what spaces separate. */
function wordsOf(text: string): string[] {
  return text.split(/\s+/).filter((word) => word !== '');
}

/** A whole number is sent as one; anything else is sent as typed, so the API, which owns the rules, names the field. */
function typed(value: string, integer: boolean): unknown {
  const trimmed = value.trim();
  return integer && /^\d+$/.test(trimmed) ? Number(trimmed) : trimmed;
}

/** Each problem beside its input; one the form has no input for (or any other error) in the form's own alert. */
function showProblems(err: unknown, fields: readonly Field[], general: HTMLElement): void {
  if (!(err instanceof ApiError) || err.details.length === 0) {
    show(general, describe(err));
    return;
  }
  const unplaced: string[] = [];
  for (const detail of err.details) {
    // A problem inside a currency item (`supportedCurrencies.0`) goes to its first input.
    const target = fields.find((candidate) => candidate.path === detail.field) ?? fields.find((candidate) => candidate.path.startsWith(`${detail.field}.`));
    if (target === undefined) {
      unplaced.push(`${detail.field}: ${detail.message}`);
      continue;
    }
    target.input.setAttribute('aria-invalid', 'true');
    show(target.problem, `${target.label}: ${detail.message}`);
  }
  show(general, unplaced.length === 0 ? `Not saved: ${err.message}` : `Not saved: ${unplaced.join('; ')}`);
}
