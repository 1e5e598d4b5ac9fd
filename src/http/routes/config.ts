// Platform configuration of the calling environment (SERVICE_SPEC part 4, CONTRACT.md).
import { Type, type Static } from '@sinclair/typebox';
import { renderConfig, WEBHOOK_FORMATS, type PlatformEnv } from '../../../actors/platform.js';
import { updateConfig } from '../../../actors/commands/config.js';
import { platformEnv } from '../../../actors/queries/records.js';
import { route, type Reply, type Route, type RoutePorts } from '../route.js';
import { EmbeddedWalletConfigInput, PlatformConfigView, SupportedCurrencyInput } from '../schemas/resources.js';
import { List, Obj, Str, StringEnum, Text, validator } from '../validation.js';

const DOMAIN_PATTERN = '^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$';

const PatchConfig = Obj(
  {
    umaDomain: Type.Optional(Str({ pattern: DOMAIN_PATTERN, maxLength: 253 })),
    proxyUmaSubdomain: Type.Optional(Text({ maxLength: 253 })),
    webhookEndpoint: Type.Optional(Text({ maxLength: 2048, description: 'http(s) URL; empty string removes it. Production: public addresses only (sandbox: also loopback)' })),
    supportedCurrencies: Type.Optional(List(SupportedCurrencyInput, { maxItems: 20 })),
    embeddedWalletConfig: Type.Optional(EmbeddedWalletConfigInput),
    webhookFormat: Type.Optional(
      StringEnum(WEBHOOK_FORMATS, { description: 'how events made from now on are sent and listed; an event keeps the format it was made in. ENVELOPE also records CUSTOMER, VERIFICATION and EXTERNAL_ACCOUNT events' }),
    ),
  },
  { $id: 'UpdateConfigRequest' },
);

/** The URLs a patch gives that the service will fetch (a webhook endpoint, key sets), by field. */
function outboundUrlsOf(body: Static<typeof PatchConfig>): Array<[field: string, url: string]> {
  const urls: Array<[string, string]> = [];
  if (body.webhookEndpoint !== undefined && body.webhookEndpoint !== '') urls.push(['webhookEndpoint', body.webhookEndpoint]);
  body.embeddedWalletConfig?.oidcIssuers?.forEach((issuer, i) => {
    if (issuer.jwksUri !== undefined) urls.push([`embeddedWalletConfig.oidcIssuers.${i}.jwksUri`, issuer.jwksUri]);
  });
  return urls;
}

/** The configuration as read, with the signer clients check OTP targets and tokens against. */
const configReply = (ports: RoutePorts, current: PlatformEnv): Reply => ({ status: 200, body: renderConfig(current, ports.signerPublicKey) });

export const configRoutes: Route[] = [
  route({
    method: 'GET',
    path: '/config',
    operationId: 'getConfig',
    summary: "Read the environment's platform configuration",
    tag: 'Configuration',
    permission: 'VIEW',
    response: PlatformConfigView,
    status: 200,
    handle: async ({ read, ports, env }) => configReply(ports, await read(platformEnv, { envId: env.id })),
  }),
  route<Static<typeof PatchConfig>>({
    method: 'PATCH',
    path: '/config',
    operationId: 'updateConfig',
    summary: 'Update umaDomain, webhookEndpoint, webhookFormat, supportedCurrencies or embeddedWalletConfig; newly supported currencies get platform accounts',
    tag: 'Configuration',
    permission: 'MANAGE',
    body: validator(PatchConfig),
    response: PlatformConfigView,
    status: 200,
    handle: async (ctx) => {
      const { ports, env, body } = ctx;
      // Where the URLs the service will fetch lead needs DNS, so it is checked here rather
      // than in the decision (which runs synchronously, its environment held).
      // Nothing it reads can change meanwhile: an environment's kind is fixed at creation.
      for (const [field, url] of outboundUrlsOf(body)) await ports.outboundTargets.check(env.environment, field, url);
      const reply = await ctx.run(updateConfig, { envId: env.id, patch: body }, (current) => configReply(ports, current));
      // A new endpoint gets the events that waited for one.
      ports.webhooks.kick(env.id);
      return reply;
    },
  }),
];
