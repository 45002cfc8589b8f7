ALTER TABLE "invocations" ADD COLUMN "run_end_handled_at" timestamp with time zone DEFAULT now();--> statement-breakpoint
ALTER TABLE "invocations" ADD COLUMN "before_run_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "invocations_run_end_pending_idx" ON "invocations" USING btree ("ended_at") WHERE ended_at > run_end_handled_at;