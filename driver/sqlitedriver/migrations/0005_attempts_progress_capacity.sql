-- Each attempt explains itself. attempted_by is the client that claimed the
-- latest attempt; the claim sets it with locked_by, and unlike locked_by it
-- is kept after the attempt ends, so with attempted_at and finalized_at a
-- finished job tells when and where its last attempt ran.
ALTER TABLE {t} ADD COLUMN attempted_by TEXT;
