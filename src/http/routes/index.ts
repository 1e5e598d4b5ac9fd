// Every route the service serves, in one list: the router and the OpenAPI document both read it.
import type { Route } from '../route.js';
import { accountRoutes } from './accounts.js';
import { authRoutes } from './wallet-auth.js';
import { configRoutes } from './config.js';
import { customerRoutes } from './customers.js';
import { bulkImportRoutes } from './bulk-imports.js';
import { exchangeRateRoutes } from './exchange-rates.js';
import { incomingRoutes } from './incoming.js';
import { lookupRoutes } from './lookups.js';
import { quoteRoutes } from './quotes.js';
import { receiverRoutes } from './receiver.js';
import { sandboxRoutes } from './sandbox.js';
import { transactionRoutes } from './transactions.js';
import { paymentVolumeRoutes } from './payment-volume.js';
import { verificationRoutes } from './verifications.js';
import { businessVerificationRoutes } from './business-verification.js';
import { tokenRoutes } from './tokens.js';
import { transferRoutes } from './transfers.js';
import { webhookRoutes } from './webhooks.js';

export const routes: readonly Route[] = [
  ...customerRoutes,
  ...bulkImportRoutes,
  ...accountRoutes,
  ...configRoutes,
  ...exchangeRateRoutes,
  ...receiverRoutes,
  ...quoteRoutes,
  ...paymentVolumeRoutes,
  ...transactionRoutes,
  ...incomingRoutes,
  ...transferRoutes,
  ...sandboxRoutes,
  ...webhookRoutes,
  ...authRoutes,
  ...verificationRoutes,
  ...lookupRoutes,
  ...businessVerificationRoutes,
  ...tokenRoutes,
];
