-- Pausing with a note: a paused job keeps why it was paused (the note, possibly empty),
-- who paused it (the calling API token's name, as a person's retry records it) and
-- when (the database's clock). Resuming clears all three; a job paused before this
-- migration reads as paused by nobody known ('' and NULL).
ALTER TABLE jobs
    ADD COLUMN pause_note text NOT NULL DEFAULT '',
    ADD COLUMN paused_by text NOT NULL DEFAULT '',
    ADD COLUMN paused_at timestamptz;
