// The platform's webhook endpoint in the simulation: answers every delivery at once, by
// the simulator's draws. An approval webhook (INCOMING_PAYMENT, PENDING) is approved (200),
// rejected (403), left for the platform to decide by API (202), refused (500) or not
// answered in time; other events mostly succeed. During an outage nothing is answered.
import type { Egress, EgressOutcome, EgressRequest } from '../outbound/egress.js';
import { Weights, type Rng } from './random.js';

interface WebhookBody {
  type?: string;
  transaction?: { id?: string; status?: string };
}

/**
 * Whether a body can be an approval webhook: only those are parsed (parsing every body was
 * about 1% of a run). A body without both words is none; one with them is parsed and decided
 * by its fields, so the draws, and the run, are the same as when every body was parsed.
 */
function mayAskApproval(body: string): boolean {
  return body.includes('INCOMING_PAYMENT') && body.includes('PENDING');
}

/** How the platform answers an approval webhook, and any other delivery. */
const APPROVAL_ANSWERS = new Weights({ approve: 50, reject: 15, later: 20, fail: 10, silent: 5 });
const DELIVERY_ANSWERS = new Weights({ ok: 90, fail: 6, silent: 4 });

export class SimulatedEndpoint implements Egress {
  readonly #rng: Rng;
  readonly #awaitApproval: (transactionId: string) => void;
  /** Until this simulated time nothing is answered. */
  downUntil = 0;
  /** The simulated time, read when a delivery arrives. */
  readonly #now: () => number;

  constructor(rng: Rng, now: () => number, awaitApproval: (transactionId: string) => void) {
    this.#rng = rng;
    this.#now = now;
    this.#awaitApproval = awaitApproval;
  }

  async post(request: EgressRequest): Promise<EgressOutcome> {
    if (this.#now() < this.downUntil) return { statusCode: 0, ms: request.timeoutMs };
    const event = mayAskApproval(request.body) ? (JSON.parse(request.body) as WebhookBody) : undefined;
    const ms = this.#rng.between(1, 400);
    if (event?.type === 'INCOMING_PAYMENT' && event.transaction?.status === 'PENDING' && event.transaction.id !== undefined) {
      const answer = this.#rng.weighted(APPROVAL_ANSWERS);
      if (answer === 'later') this.#awaitApproval(event.transaction.id);
      const statusCode = { approve: 200, reject: 403, later: 202, fail: 500, silent: 0 }[answer];
      return { statusCode, ms: statusCode === 0 ? request.timeoutMs : ms };
    }
    const answer = this.#rng.weighted(DELIVERY_ANSWERS);
    return { statusCode: answer === 'ok' ? 200 : answer === 'fail' ? 503 : 0, ms: answer === 'silent' ? request.timeoutMs : ms };
  }
}
