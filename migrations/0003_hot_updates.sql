DROP INDEX "sessions_app_user_idx";--> statement-breakpoint
CREATE INDEX "sessions_app_user_idx" ON "sessions" USING btree ("app","user_id");--> statement-breakpoint
-- Room on each page for heap-only updates of rows updated in place many times (a session's seq bump per event, a
-- workflow node's checkpoint per child); applies to pages written from now on.
ALTER TABLE "sessions" SET (fillfactor = 80);--> statement-breakpoint
ALTER TABLE "nodes" SET (fillfactor = 80);
