-- Migration 10: the rows a run set to NULL, by model and key, kept while it runs. A row it
-- nullifies and later deletes (reached by a nullify relation and by a delete path) is then
-- reported deleted only, and a row two relations nullify is counted once, as the plan counts
-- them. The rows of a run are forgotten when it ends, and those of runs no longer running when
-- another run starts that records any.
CREATE TABLE cascade_nullified_row (
    run_id INTEGER NOT NULL,
    model TEXT NOT NULL,
    row_key TEXT NOT NULL,
    PRIMARY KEY (run_id, model, row_key)
);
