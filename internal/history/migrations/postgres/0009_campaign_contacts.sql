-- The contacts of campaigns (issue 29): a campaign may hold a million, so
-- they live here and its resource holds only the spec and counters. One row
-- per contact, numbered (seq) in the order given; a number is in a campaign
-- once. state is pending (waiting for due_at), dialing (an attempt claimed:
-- call_id is its call, placed or about to be), or final: done, skipped,
-- canceled. Times are integer nanoseconds since the epoch.
CREATE TABLE campaign_contacts (
    namespace      TEXT    NOT NULL,
    campaign       TEXT    NOT NULL,
    seq            BIGINT  NOT NULL,
    to_number      TEXT    NOT NULL,
    zones          TEXT    NOT NULL,
    variables      TEXT    NOT NULL,
    metadata       TEXT    NOT NULL,
    state          TEXT    NOT NULL,
    due_at         BIGINT  NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    day            TEXT    NOT NULL DEFAULT '',
    attempts_today INTEGER NOT NULL DEFAULT 0,
    call_id        TEXT    NOT NULL DEFAULT '',
    outcome        TEXT    NOT NULL DEFAULT '',
    updated_at     BIGINT  NOT NULL,
    PRIMARY KEY (namespace, campaign, seq)
);

CREATE UNIQUE INDEX campaign_contacts_number ON campaign_contacts (namespace, campaign, to_number);

-- The scheduler's next due contacts: read in index order, never sorted.
CREATE INDEX campaign_contacts_due ON campaign_contacts (namespace, campaign, due_at, seq)
    WHERE state = 'pending';

-- The attempts in flight, at most a campaign's concurrency.
CREATE INDEX campaign_contacts_dialing ON campaign_contacts (namespace, campaign, seq)
    WHERE state = 'dialing';

-- The status counters.
CREATE INDEX campaign_contacts_state ON campaign_contacts (namespace, campaign, state, outcome);

-- The campaign that placed a call (its switchboard.dev/campaign label), so
-- that GET /v1/campaigns/{id}/calls pages through the store as the list of
-- calls does. Calls before campaigns existed have none.
ALTER TABLE calls ADD COLUMN campaign TEXT NOT NULL DEFAULT '';
CREATE INDEX calls_by_campaign ON calls (namespace, campaign, created_at DESC, call_id DESC);
