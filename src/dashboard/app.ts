// The dashboard: sign in with a platform token, then pages over the service's public API.
// Pages are chosen by the URL's fragment (#/overview), so a reload keeps the page and no
// token ever appears in a URL.
import { ApiError, call, describe, environmentOf, forgetToken, saveToken, savedToken, type Token } from './api.js';
import { h, show } from './dom.js';
import { hashOf, type DashboardPage } from './page.js';
import { overviewPage } from './pages/overview.js';
import { customersPage } from './pages/customers.js';
import { transactionsPage } from './pages/transactions.js';
import { webhooksPage } from './pages/webhooks.js';
import { configPage } from './pages/config.js';
import { sandboxPage } from './pages/sandbox.js';
import { walletsPage } from './pages/wallets.js';
import { sendPage } from './pages/send.js';
import { operationsPage } from './pages/operations.js';

const root = document.getElementById('app');
if (root === null) throw new Error('the page has no #app element');

/** Every page, in the navigation's order. */
const PAGES: readonly DashboardPage[] = [overviewPage, customersPage, transactionsPage, sendPage, walletsPage, webhooksPage, operationsPage, configPage, sandboxPage];

function render(): void {
  const token = savedToken();
  if (token === undefined) {
    show(root!, signIn());
    return;
  }
  const environment = environmentOf(token);
  const pages = PAGES.filter((page) => page.sandboxOnly !== true || environment === 'sandbox');
  const [path = '', ...params] = location.hash.replace(/^#\/?/, '').split('/').filter((segment) => segment !== '').map(decodeURIComponent);
  const page = pages.find((candidate) => candidate.path === path) ?? pages[0]!;
  const main = h('section', { 'aria-live': 'polite' });
  show(root!, header(token, pages, page), main);
  const navigate = (...segments: string[]): void => {
    location.hash = hashOf(...segments);
  };
  page.render({ token, environment, main, params, navigate }).catch((err: unknown) => show(main, h('h2', {}, page.name), h('p', { role: 'alert' }, describe(err))));
}

function signIn(): HTMLElement {
  const tokenId = h('input', { id: 'token-id', name: 'tokenId', autocomplete: 'username', required: true });
  const secret = h('input', { id: 'client-secret', name: 'clientSecret', type: 'password', autocomplete: 'current-password', required: true });
  const problem = h('p', { role: 'alert' });
  const form = h(
    'form',
    { 'aria-label': 'Sign in' },
    h('h1', {}, 'Payments dashboard'),
    h('label', { for: 'token-id' }, 'Token ID'),
    tokenId,
    h('label', { for: 'client-secret' }, 'Client secret'),
    secret,
    h('button', { type: 'submit' }, 'Sign in'),
    problem,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const token: Token = { tokenId: tokenId.value.trim(), clientSecret: secret.value };
    // The token is kept only once the API accepts it.
    call(token, 'GET', '/config').then(
      () => {
        saveToken(token);
        render();
      },
      (err: unknown) => show(problem, err instanceof ApiError && err.status === 401 ? 'That token ID and client secret were not accepted.' : describe(err)),
    );
  });
  return form;
}

function header(token: Token, pages: readonly DashboardPage[], current: DashboardPage): HTMLElement {
  const environment = environmentOf(token);
  const signOut = h('button', { type: 'button' }, 'Sign out');
  signOut.addEventListener('click', () => {
    forgetToken();
    render();
  });
  const links = pages.map((page) => h('a', { href: hashOf(page.path), 'aria-current': page === current ? 'page' : undefined }, page.name));
  return h(
    'header',
    {},
    h('span', { class: `badge ${environment}`, role: 'status', 'aria-label': `Environment: ${environment}` }, environment),
    h('nav', { 'aria-label': 'Pages' }, ...links),
    signOut,
  );
}


window.addEventListener('hashchange', render);
render();
