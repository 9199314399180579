'use strict';
// A backend written with the hosted voice-AI service's official Node SDK
// (retell-sdk), pointed at Switchboard by its baseURL and nothing else.
// It places a call, polls it until it is over and analyzed, lists the
// agent's calls a page at a time, stops a call, creates a batch call (a
// campaign), and provokes the errors an SDK user
// catches, then prints what it saw as one JSON object for
// internal/app/e2e/restapi's TestSDKCompatNode to check.
//
//   SWITCHBOARD_URL=http://127.0.0.1:8080 SWITCHBOARD_API_KEY=$(cat .dev/api-key) \
//   SWITCHBOARD_AGENT_ID=7f2c1e9a-3b4d-4c5e-8f60-1a2b3c4d5e6f SWITCHBOARD_FROM_NUMBER=+14155550100 \
//   SWITCHBOARD_TO_NUMBER=+14155551234 node sdk-compat.js

const { Retell, APIError } = require('retell-sdk');

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// What an SDK user sees of a failed request.
async function failure(request) {
  try {
    await request();
  } catch (err) {
    if (!(err instanceof APIError)) throw err;
    return { class: err.constructor.name, status: err.status, error: err.error };
  }
  throw new Error('the request succeeded; it should have failed');
}

async function main() {
  const baseURL = env('SWITCHBOARD_URL');
  const agentId = env('SWITCHBOARD_AGENT_ID');
  const from = env('SWITCHBOARD_FROM_NUMBER');
  const to = env('SWITCHBOARD_TO_NUMBER');
  const client = new Retell({ apiKey: env('SWITCHBOARD_API_KEY'), baseURL });
  const out = {};

  out.created = await client.call.createPhoneCall({
    from_number: from,
    to_number: to,
    override_agent_id: agentId,
    retell_llm_dynamic_variables: { customer_name: 'Ada' },
    metadata: { order: 7 },
  });

  // Poll, as a backend without webhooks does, until the analysis is in.
  let call = out.created;
  out.statuses = [call.call_status];
  for (const deadline = Date.now() + 30000; !(call.call_status === 'ended' && call.call_analysis);) {
    if (call.call_status === 'error') throw new Error(`call ${call.call_id} failed: ${JSON.stringify(call)}`);
    if (Date.now() > deadline) throw new Error(`call ${call.call_id} still ${call.call_status} after 30 s`);
    await sleep(50);
    call = await client.call.retrieve(out.created.call_id);
    if (out.statuses[out.statuses.length - 1] !== call.call_status) out.statuses.push(call.call_status);
  }
  out.final = call;

  // The agent's calls, newest first, one per page.
  const filter_criteria = {
    agent: [{ agent_id: agentId }],
    call_type: { op: 'in', type: 'enum', value: ['phone_call'] },
  };
  out.firstPage = await client.call.list({ filter_criteria, limit: 1, sort_order: 'descending' });
  out.secondPage = await client.call.list({ filter_criteria, limit: 1, pagination_key: out.firstPage.pagination_key });
  out.ended = await client.call.list({
    filter_criteria: { call_status: { op: 'in', type: 'enum', value: ['ended'] }, to_number: { op: 'eq', type: 'string', value: to } },
  });

  // stop: a call hung up while it rings or talks.
  let stopped = await client.call.createPhoneCall({
    from_number: from,
    to_number: to,
    override_agent_id: agentId,
    retell_llm_dynamic_variables: { customer_name: 'Ada' },
  });
  for (const deadline = Date.now() + 30000; stopped.call_status !== 'ongoing';) {
    if (Date.now() > deadline) throw new Error(`call ${stopped.call_id} never went out`);
    await sleep(20);
    stopped = await client.call.retrieve(stopped.call_id);
  }
  await client.call.stop(stopped.call_id);
  for (const deadline = Date.now() + 30000; stopped.call_status === 'ongoing';) {
    if (Date.now() > deadline) throw new Error(`call ${stopped.call_id} still ongoing after its stop`);
    await sleep(50);
    stopped = await client.call.retrieve(stopped.call_id);
  }
  out.stopped = stopped;

  // batchCall: a campaign, scheduled a day ahead so that it places nothing here.
  out.batchTrigger = Date.now() + 24 * 3600 * 1000;
  out.batch = await client.batchCall.createBatchCall({
    from_number: from,
    name: 'Reminders',
    trigger_timestamp: out.batchTrigger,
    call_time_window: { windows: [{ start: 9 * 60, end: 20 * 60 }], day: ['Monday', 'Tuesday'] },
    tasks: [
      { to_number: '+14155551240', override_agent_id: agentId, retell_llm_dynamic_variables: { customer_name: 'Ada' } },
      { to_number: '+14155551241', override_agent_id: agentId, retell_llm_dynamic_variables: { customer_name: 'Grace' } },
      { to_number: '+14155551240', override_agent_id: agentId, retell_llm_dynamic_variables: { customer_name: 'Ada' } },
    ],
  });

  out.errors = {
    batchWithoutAgent: await failure(() =>
      client.batchCall.createBatchCall({ from_number: from, tasks: [{ to_number: to }] })),
    missingVariables: await failure(() =>
      client.call.createPhoneCall({ from_number: from, to_number: to, override_agent_id: agentId })),
    notFound: await failure(() => client.call.retrieve('call_00000000000000000000000000000000')),
    ascending: await failure(() => client.call.list({ sort_order: 'ascending' })),
    badKey: await failure(() => new Retell({ apiKey: 'key_not_issued', baseURL }).call.list()),
    // The first call is over: nothing to stop.
    stopEnded: await failure(() => client.call.stop(out.created.call_id)),
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
