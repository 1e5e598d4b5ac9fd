// Customers (SERVICE_SPEC part 4, CONTRACT.md): create, list, read, update, soft delete,
// and POST /users, the older name for create.
import { Type, type Static } from '@sinclair/typebox';
import { CUSTOMER_TYPES, KYB_STATUSES, KYC_STATUSES, renderCustomer, type Customer, type CustomerInput } from '../../../actors/customer.js';
import { createCustomer, deleteCustomer, updateCustomer } from '../../../actors/commands/customers.js';
import { customer, customerPage, type CustomerFilter } from '../../../actors/queries/customers.js';
import { PageQuery } from '../pagination.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { recordReply } from '../record-reply.js';
import { AddressSchema, BusinessInfoSchema, CurrencyCode, CustomerView, Email, IdOf, ListOf, UmaAddress } from '../schemas/resources.js';
import { checkKnownCurrency, Country, DateString, DateTime, instant, List, Obj, StringEnum, Text, validator, type Parsed } from '../validation.js';

const Profile = {
  email: Type.Optional(Email),
  fullName: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
  birthDate: Type.Optional(DateString()),
  nationality: Type.Optional(Country()),
  address: Type.Optional(AddressSchema),
};

const CreateCustomer = Obj(
  {
    customerType: StringEnum(CUSTOMER_TYPES),
    businessInfo: Type.Optional(BusinessInfoSchema),
    platformCustomerId: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
    region: Type.Optional(Country()),
    currencies: Type.Optional(List(CurrencyCode, { maxItems: 20 })),
    umaAddress: Type.Optional(UmaAddress),
    ...Profile,
  },
  { $id: 'CreateCustomerRequest' },
);

/** POST /customers' body, which a bulk import's rows are read as too (src/http/bulk-csv.ts). */
export const createCustomerBody = validator(CreateCustomer);

const UpdateCustomer = Obj(
  {
    customerType: StringEnum(CUSTOMER_TYPES, { description: "the customer's own type: it never changes" }),
    businessInfo: Type.Optional(Type.Partial(BusinessInfoSchema, { description: "a BUSINESS's: merged into its businessInfo" })),
    kybStatus: Type.Optional(StringEnum(KYB_STATUSES)),
    region: Type.Optional(Country()),
    currencies: Type.Optional(List(CurrencyCode, { maxItems: 20 })),
    umaAddress: Type.Optional(UmaAddress),
    kycStatus: Type.Optional(StringEnum(KYC_STATUSES)),
    ...Profile,
  },
  { $id: 'UpdateCustomerRequest' },
);

const CreateUser = Obj(
  {
    userType: StringEnum(CUSTOMER_TYPES),
    businessInfo: Type.Optional(BusinessInfoSchema),
    platformUserId: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
    umaAddress: Type.Optional(UmaAddress),
    region: Type.Optional(Country()),
    currencies: Type.Optional(List(CurrencyCode, { maxItems: 20 })),
    ...Profile,
  },
  { $id: 'CreateUserRequest' },
);

const ListCustomers = Obj({
  platformCustomerId: Type.Optional(Text({ maxLength: 255 })),
  umaAddress: Type.Optional(Text({ maxLength: 255 })),
  email: Type.Optional(Text({ maxLength: 254, description: 'the customer email, case aside' })),
  region: Type.Optional(Country()),
  customerType: Type.Optional(StringEnum(CUSTOMER_TYPES)),
  currency: Type.Optional(CurrencyCode),
  createdAfter: Type.Optional(DateTime),
  createdBefore: Type.Optional(DateTime),
  updatedAfter: Type.Optional(DateTime),
  updatedBefore: Type.Optional(DateTime),
  isDeleted: Type.Optional(Type.Boolean({ description: 'only deleted (true) or only live (false) customers' })),
  isIncludingDeleted: Type.Optional(Type.Boolean({ description: 'list deleted customers too (default false; isDeleted, when given, decides)' })),
  ...PageQuery,
});
type CustomerListQuery = Static<typeof ListCustomers>;

const CustomerIdParam = validator(Obj({ customerId: IdOf('Customer') }));

const created = (customer: Customer): Reply => recordReply(201, 'Customer', customer);
const current = (customer: Customer): Reply => ({ status: 200, body: renderCustomer(customer) });

function create(ctx: RouteContext<unknown, unknown>, customer: CustomerInput): Promise<Reply> {
  return ctx.run(createCustomer, { envId: ctx.env.id, customer }, created);
}

/** The filter a list query gives; a bad time bound or an unknown currency is a 400 naming its parameter. */
function customerFilter(query: CustomerListQuery): CustomerFilter {
  if (query.currency !== undefined) checkKnownCurrency(query.currency);
  return {
    platformCustomerId: query.platformCustomerId,
    umaAddress: query.umaAddress?.toLowerCase(),
    email: query.email,
    region: query.region,
    customerType: query.customerType,
    currency: query.currency,
    createdFrom: instant('createdAfter', query.createdAfter) ?? -Infinity,
    createdTo: instant('createdBefore', query.createdBefore) ?? Infinity,
    updatedFrom: instant('updatedAfter', query.updatedAfter) ?? -Infinity,
    updatedTo: instant('updatedBefore', query.updatedBefore) ?? Infinity,
    deleted: query.isDeleted ?? (query.isIncludingDeleted === true ? undefined : false),
  };
}

async function listCustomers(ctx: RouteContext<undefined, CustomerListQuery>): Promise<Reply> {
  const page = await ctx.read(customerPage, { envId: ctx.env.id, filter: customerFilter(ctx.query), page: ctx.query });
  return { status: 200, body: { ...page, data: page.data.map(renderCustomer) } };
}

export const customerRoutes: Route[] = [
  route<Static<typeof CreateCustomer>>({
    method: 'POST',
    path: '/customers',
    operationId: 'createCustomer',
    summary: 'Create a customer and provision its internal accounts',
    tag: 'Customers',
    permission: 'MANAGE',
    body: createCustomerBody,
    response: CustomerView,
    status: 201,
    idempotent: true,
    handle: (ctx) => create(ctx, ctx.body),
  }),
  route<Static<typeof CreateUser>>({
    method: 'POST',
    path: '/users',
    operationId: 'createUser',
    summary: 'Register a user (creates a Customer: platformUserId is platformCustomerId, userType is customerType)',
    tag: 'Customers',
    permission: 'MANAGE',
    body: validator(CreateUser),
    response: CustomerView,
    status: 201,
    idempotent: true,
    handle: (ctx) => {
      const { userType, platformUserId, ...rest } = ctx.body;
      const input: CustomerInput = { ...rest, customerType: userType };
      if (platformUserId !== undefined) input.platformCustomerId = platformUserId;
      return create(ctx, input);
    },
  }),
  route<undefined, Static<typeof ListCustomers>>({
    method: 'GET',
    path: '/customers',
    operationId: 'listCustomers',
    summary: 'List customers, newest first',
    tag: 'Customers',
    permission: 'VIEW',
    query: validator(ListCustomers, { coerce: true }),
    response: ListOf(CustomerView),
    status: 200,
    handle: listCustomers,
  }),
  route({
    method: 'GET',
    path: '/customers/{customerId}',
    operationId: 'getCustomer',
    summary: 'Read a customer (deleted customers stay readable)',
    tag: 'Customers',
    permission: 'VIEW',
    params: CustomerIdParam,
    response: CustomerView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderCustomer(await read(customer, { envId: env.id, customerId: params.customerId })) }),
  }),
  route<Static<typeof UpdateCustomer>, undefined, Parsed<typeof CustomerIdParam>>({
    method: 'PATCH',
    path: '/customers/{customerId}',
    operationId: 'updateCustomer',
    summary: 'Update a customer; currencies replace the list and new ones get accounts; region is immutable',
    tag: 'Customers',
    permission: 'MANAGE',
    body: validator(UpdateCustomer),
    params: CustomerIdParam,
    response: CustomerView,
    status: 200,
    handle: (ctx) => ctx.run(updateCustomer, { envId: ctx.env.id, customerId: ctx.params.customerId, patch: ctx.body }, current),
  }),
  route({
    method: 'DELETE',
    path: '/customers/{customerId}',
    operationId: 'deleteCustomer',
    summary: 'Soft-delete a customer: it stays readable with isDeleted true',
    tag: 'Customers',
    permission: 'MANAGE',
    params: CustomerIdParam,
    response: CustomerView,
    status: 200,
    handle: (ctx) => ctx.run(deleteCustomer, { envId: ctx.env.id, customerId: ctx.params.customerId }, current),
  }),
];
