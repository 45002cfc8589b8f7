ALTER TABLE "invocations" ADD COLUMN "forked_from" text;--> statement-breakpoint
ALTER TABLE "invocations" ADD COLUMN "fork" jsonb;--> statement-breakpoint
CREATE INDEX "invocations_forked_from_idx" ON "invocations" USING btree ("forked_from") WHERE forked_from is not null;