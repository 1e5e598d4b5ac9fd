// GET /transactions/volume: what the dashboard's overview draws, aggregated by the service in
// one read (actors/queries/payment-volume.ts) instead of the page walking every transaction.
import { Type, type Static } from '@sinclair/typebox';
import { tallyVolume, volumeTally, VOLUME_PERIODS, VOLUME_SLICE } from '../../../actors/queries/payment-volume.js';
import { TRANSACTION_STATUSES } from '../../../actors/transaction.js';
import { isoTime } from '../../../actors/iso-time.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { CurrencyCode } from '../schemas/resources.js';
import { Obj, StringEnum, validator } from '../validation.js';

const VolumeQuery = Obj({
  period: Type.Optional(StringEnum(VOLUME_PERIODS, { description: 'LAST_HOUR: 12 buckets of 5 minutes; LAST_DAY: 24 of an hour; LAST_30_DAYS: 30 of a day (UTC). Default LAST_DAY' })),
});

const Amounts = Type.Array(Type.Integer({ minimum: 0 }), { description: 'Smallest units of the currency, one per bucket, oldest first' });

const CurrencyVolumeView = Obj(
  {
    currency: CurrencyCode,
    decimals: Type.Integer({ minimum: 0, maximum: 18, description: "Digits after the point of the currency's major unit" }),
    sent: Amounts,
    received: Amounts,
    sentTotal: Type.Integer({ minimum: 0 }),
    receivedTotal: Type.Integer({ minimum: 0 }),
  },
  { $id: 'CurrencyVolume' },
);

const PaymentVolumeView = Obj(
  {
    period: StringEnum(VOLUME_PERIODS),
    bucketSeconds: Type.Integer({ minimum: 1 }),
    buckets: Type.Array(Type.String({ format: 'date-time' }), { description: "Each bucket's start, oldest first; the last one holds the time of the read" }),
    currencies: Type.Array(CurrencyVolumeView, { description: 'Completed volume per currency: OUTGOING transactions count as sent, INCOMING as received, in the bucket of their creation' }),
    outcomes: Obj(Object.fromEntries(TRANSACTION_STATUSES.map((status) => [status, Type.Integer({ minimum: 0 })])), {
      description: "How many of the period's transactions stand at each status",
    }),
  },
  { $id: 'PaymentVolume' },
);

/** What GET /transactions/volume answers. */
export type PaymentVolume = Static<typeof PaymentVolumeView>;

/**
 * The period's volume read slice by slice (VOLUME_SLICE transactions each), the event loop
 * given back between slices: 30 days of a busy environment is hundreds of thousands of
 * transactions, at about 2 µs each, which in one read would hold every payment back.
 */
async function volumeReply({ read, env, query }: RouteContext<undefined, Static<typeof VolumeQuery>>): Promise<Reply> {
  const tally = await read(volumeTally, { period: query.period ?? 'LAST_DAY' });
  let from = await read(tallyVolume, { envId: env.id, tally, limit: VOLUME_SLICE });
  while (from !== undefined) {
    await new Promise((resolve) => setImmediate(resolve));
    from = await read(tallyVolume, { envId: env.id, tally, from, limit: VOLUME_SLICE });
  }
  const { period, bucketMs, bucketStarts, currencies, outcomes } = tally.result();
  return { status: 200, body: { period, bucketSeconds: bucketMs / 1000, buckets: bucketStarts.map(isoTime), currencies, outcomes } };
}

export const paymentVolumeRoutes: Route[] = [
  route<undefined, Static<typeof VolumeQuery>>({
    method: 'GET',
    path: '/transactions/volume',
    operationId: 'getPaymentVolume',
    summary: 'Completed payment volume per currency over a recent period, in buckets, and the period’s transactions by status',
    tag: 'Transactions',
    permission: 'VIEW',
    query: validator(VolumeQuery, { coerce: true }),
    response: PaymentVolumeView,
    status: 200,
    handle: volumeReply,
  }),
];
