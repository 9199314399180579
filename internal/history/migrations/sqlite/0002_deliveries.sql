-- Webhook deliveries, one row per (organization, delivery id): the queue
-- and the log at once. Times are integer nanoseconds since the epoch, as in
-- calls. due_at is when a worker is next to pick the delivery up (NULL:
-- never, until a retry is requested); lease_until is when a claiming
-- worker's hold on it lapses. retry_requested_at is the latest retry asked
-- for (RFC 3339 text, compared with the record's status.retryHandled).
-- object is the whole record as JSON text.
CREATE TABLE deliveries (
    namespace          TEXT    NOT NULL,
    delivery_id        TEXT    NOT NULL,
    endpoint           TEXT    NOT NULL,
    endpoint_id        TEXT    NOT NULL,
    call_name          TEXT    NOT NULL,
    event              TEXT    NOT NULL,
    phase              TEXT    NOT NULL,
    created_at         INTEGER NOT NULL,
    completed_at       INTEGER,
    due_at             INTEGER,
    lease_until        INTEGER,
    retry_requested_at TEXT,
    object             TEXT    NOT NULL,
    updated_at         INTEGER NOT NULL,
    PRIMARY KEY (namespace, delivery_id)
);

-- Claiming reads the earliest due rows; most rows, finished, are not due
-- and stay out of this index.
CREATE INDEX deliveries_due ON deliveries (due_at) WHERE due_at IS NOT NULL;
-- An endpoint's log, newest first, unfiltered or by phase or event; a call's deliveries.
CREATE INDEX deliveries_by_endpoint       ON deliveries (namespace, endpoint, created_at DESC, delivery_id DESC);
CREATE INDEX deliveries_by_endpoint_phase ON deliveries (namespace, endpoint, phase, created_at DESC, delivery_id DESC);
CREATE INDEX deliveries_by_endpoint_event ON deliveries (namespace, endpoint, event, created_at DESC, delivery_id DESC);
CREATE INDEX deliveries_by_call           ON deliveries (namespace, call_name, created_at DESC, delivery_id DESC);
-- Retention deletes the deliveries finished before a time.
CREATE INDEX deliveries_completed ON deliveries (completed_at);
