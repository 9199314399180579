-- Each connected call's transcript, one row per (organization, call id),
-- written once when the call is processed after it ends. It is kept apart
-- from the call's object: a long conversation would make every read of a
-- call, and the Call resource, carry it. stored_at (integer nanoseconds
-- since the epoch) lets recording retention delete transcripts with the
-- recordings, as personal data. turns is JSON text, as written.
CREATE TABLE transcripts (
    namespace TEXT   NOT NULL,
    call_id   TEXT   NOT NULL,
    stored_at BIGINT NOT NULL,
    turns     TEXT   NOT NULL,
    PRIMARY KEY (namespace, call_id)
);

CREATE INDEX transcripts_by_stored ON transcripts (stored_at);
