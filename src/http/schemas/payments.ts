// Response shapes of quotes and transactions (SERVICE_SPEC part 2), as published in the
// OpenAPI document. They describe exactly what actors/quote.ts and actors/transaction.ts
// render.
import type { Holds, Same } from './same-shape.js';
import { Type, type Static } from '@sinclair/typebox';
import { LOCKED_SIDES, PURPOSES_OF_PAYMENT, QUOTE_STATUSES } from '../../../actors/quote.js';
import { FAILURE_REASONS, TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../../../actors/transaction.js';
import { Obj, Str, StringEnum } from '../validation.js';
import { CurrencyView } from './resources.js';

const Timestamp = Str({ format: 'date-time' });
const Amount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'smallest unit of the currency' });
const KeyValues = Type.Object({}, { additionalProperties: Str(), description: 'string values under keys such as FULL_NAME, BIRTH_DATE, NATIONALITY' });

const DestinationView = Type.Union(
  [
    Obj({ destinationType: Type.Literal('ACCOUNT'), accountId: Str(), currency: Str(), paymentRail: Type.Optional(Str()) }),
    Obj({ destinationType: Type.Literal('UMA_ADDRESS'), umaAddress: Str(), currency: Str() }),
  ],
  { $id: 'PaymentDestination', description: "where a quote's or a transaction's money goes" },
);

export const RateDetailsView = Obj(
  {
    counterpartyMultiplier: Type.Number(),
    counterpartyFixedFee: Type.Number(),
    serviceApiMultiplier: Type.Number(),
    serviceApiFixedFee: Type.Number(),
    serviceApiVariableFeeRate: Type.Number(),
    serviceApiVariableFeeAmount: Type.Number(),
  },
  { $id: 'RateDetails' },
);

export const QuoteView = Obj(
  {
    id: Str(),
    status: StringEnum(QUOTE_STATUSES),
    createdAt: Timestamp,
    expiresAt: Timestamp,
    source: Type.Union([
      Obj({ sourceType: Type.Literal('ACCOUNT'), accountId: Str(), customerId: Type.Optional(Str({ description: 'absent for a platform account' })) }),
      Obj({ sourceType: Type.Literal('REALTIME_FUNDING'), currency: Str(), customerId: Type.Optional(Str({ description: 'absent for the platform' })) }),
    ]),
    destination: DestinationView,
    paymentInstructions: Type.Optional(
      Type.Array(
        Type.Union([
          Obj({
            accountOrWalletInfo: Type.Union([
              Obj({ accountType: Str(), accountNumber: Str(), routingNumber: Type.Optional(Str()), reference: Str() }),
              Obj({ accountType: Type.Literal('SPARK_WALLET'), assetType: Type.Literal('BTC'), address: Str(), reference: Str() }),
            ]),
            instructionsNotes: Str(),
          }),
          Obj({
            accountOrWalletInfo: Obj({
              accountType: Type.Literal('EMBEDDED_WALLET'),
              payloadToSign: Str({ description: "the bytes the source wallet's session key stamps (Service-Wallet-Signature) to execute" }),
            }),
          }),
        ]),
        { description: 'REALTIME_FUNDING quotes: where to send the money; EMBEDDED_WALLET sources: what to sign' },
      ),
    ),
    sendingCurrency: CurrencyView,
    receivingCurrency: CurrencyView,
    totalSendingAmount: Amount,
    totalReceivingAmount: Amount,
    exchangeRate: Type.Number({ description: 'sending-currency units per receiving-currency unit' }),
    feesIncluded: Amount,
    lockedCurrencySide: StringEnum(LOCKED_SIDES),
    lockedCurrencyAmount: Amount,
    transactionId: Type.Optional(Str({ description: 'once executed' })),
    description: Type.Optional(Str()),
    purposeOfPayment: Type.Optional(StringEnum(PURPOSES_OF_PAYMENT)),
    counterpartyInformation: Type.Optional(KeyValues),
    rateDetails: RateDetailsView,
  },
  { $id: 'Quote' },
);

export const TransactionView = Obj(
  {
    id: Str(),
    status: StringEnum(TRANSACTION_STATUSES),
    type: StringEnum(TRANSACTION_TYPES),
    direction: StringEnum(['DEBIT', 'CREDIT'] as const),
    source: Type.Union([
      Obj({ sourceType: Type.Literal('ACCOUNT'), accountId: Str(), currency: Str() }),
      Obj({ sourceType: Type.Literal('UMA_ADDRESS'), umaAddress: Str(), currency: Str() }, { description: 'the sender of an incoming UMA payment' }),
      Obj({ sourceType: Type.Literal('REALTIME_FUNDING'), currency: Str() }),
      Obj({ sourceType: Type.Literal('SANDBOX_FUNDING'), currency: Str() }, { description: 'simulated funds added by POST /sandbox/internal-accounts/{accountId}/fund (sandbox only)' }),
    ]),
    destination: DestinationView,
    customerId: Str({ description: 'sender for outgoing, recipient for incoming; empty for the platform' }),
    platformCustomerId: Str(),
    sentAmount: Type.Optional(Obj({ amount: Amount, currency: CurrencyView }, { description: 'outgoing only' })),
    receivedAmount: Obj({ amount: Amount, currency: CurrencyView }),
    exchangeRate: Type.Number(),
    quoteId: Type.Optional(Str({ description: 'where a quote made it; absent for a transfer' })),
    description: Type.Optional(Str()),
    counterpartyInformation: Type.Optional(KeyValues),
    reconciliationInstructions: Type.Optional(Obj({ reference: Str() })),
    rateDetails: Obj({
      serviceApiMultiplier: Type.Number(),
      serviceApiFixedFee: Type.Number(),
      serviceApiVariableFeeRate: Type.Number(),
      serviceApiVariableFeeAmount: Type.Number(),
    }),
    failureReason: Type.Optional(StringEnum(FAILURE_REASONS)),
    settledAt: Type.Optional(Timestamp),
    receiptDeliveryConfirmedAt: Type.Optional(Timestamp),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Transaction' },
);

/** Fail to compile when a published view and the domain's view type drift apart. */
export type ViewChecks = [
  Holds<Same<Static<typeof QuoteView>, import('../../../actors/quote.js').QuoteView>>,
  Holds<Same<Static<typeof TransactionView>, import('../../../actors/transaction.js').TransactionView>>,
];
