CREATE TABLE "app_states" (
	"app" text PRIMARY KEY NOT NULL,
	"state" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "artifacts" (
	"session_id" text NOT NULL,
	"name" text NOT NULL,
	"version" integer NOT NULL,
	"mime" text NOT NULL,
	"data" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "artifacts_session_id_name_version_pk" PRIMARY KEY("session_id","name","version")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"session_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"id" text NOT NULL,
	"invocation_id" text,
	"node_path" text DEFAULT '' NOT NULL,
	"author" text NOT NULL,
	"branch" text,
	"content" jsonb,
	"actions" jsonb NOT NULL,
	"long_running_tool_ids" jsonb,
	"error_code" text,
	"error_message" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "events_session_id_seq_pk" PRIMARY KEY("session_id","seq")
);
--> statement-breakpoint
CREATE TABLE "invocations" (
	"id" text PRIMARY KEY NOT NULL,
	"app" text NOT NULL,
	"session_id" text NOT NULL,
	"user_id" text NOT NULL,
	"root_agent" text NOT NULL,
	"definition_hash" text NOT NULL,
	"status" text NOT NULL,
	"input" jsonb,
	"output" text,
	"escalated" boolean DEFAULT false NOT NULL,
	"error" jsonb,
	"temp_state" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"llm_calls" integer DEFAULT 0 NOT NULL,
	"max_llm_calls" integer NOT NULL,
	"idempotency_key" text,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"ended_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "nodes" (
	"invocation_id" text NOT NULL,
	"path" text NOT NULL,
	"parent_path" text,
	"agent" text NOT NULL,
	"kind" text NOT NULL,
	"branch" text,
	"status" text NOT NULL,
	"checkpoint" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"escalated" boolean DEFAULT false NOT NULL,
	"output" text,
	"error" jsonb,
	"attempt" integer DEFAULT 0 NOT NULL,
	"wake" integer DEFAULT 0 NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "nodes_invocation_id_path_pk" PRIMARY KEY("invocation_id","path")
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"app" text NOT NULL,
	"user_id" text NOT NULL,
	"state" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"last_seq" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_requests" (
	"invocation_id" text NOT NULL,
	"call_id" text NOT NULL,
	"node_path" text NOT NULL,
	"kind" text NOT NULL,
	"request" jsonb NOT NULL,
	"response" jsonb,
	"status" text NOT NULL,
	"answered_by" text,
	"answered_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tool_requests_invocation_id_call_id_pk" PRIMARY KEY("invocation_id","call_id")
);
--> statement-breakpoint
CREATE TABLE "user_states" (
	"app" text NOT NULL,
	"user_id" text NOT NULL,
	"state" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "user_states_app_user_id_pk" PRIMARY KEY("app","user_id")
);
--> statement-breakpoint
ALTER TABLE "artifacts" ADD CONSTRAINT "artifacts_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invocations" ADD CONSTRAINT "invocations_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "nodes" ADD CONSTRAINT "nodes_invocation_id_invocations_id_fk" FOREIGN KEY ("invocation_id") REFERENCES "public"."invocations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_requests" ADD CONSTRAINT "tool_requests_invocation_id_invocations_id_fk" FOREIGN KEY ("invocation_id") REFERENCES "public"."invocations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "events_id_idx" ON "events" USING btree ("id");--> statement-breakpoint
CREATE INDEX "events_invocation_idx" ON "events" USING btree ("invocation_id","node_path","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "invocations_idempotency_idx" ON "invocations" USING btree ("app","idempotency_key");--> statement-breakpoint
CREATE INDEX "invocations_app_status_idx" ON "invocations" USING btree ("app","status","created_at");--> statement-breakpoint
CREATE INDEX "invocations_session_idx" ON "invocations" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "nodes_runnable_idx" ON "nodes" USING btree ("status","lease_expires_at") WHERE status in ('pending', 'running');--> statement-breakpoint
CREATE INDEX "sessions_app_user_idx" ON "sessions" USING btree ("app","user_id","updated_at");--> statement-breakpoint
CREATE INDEX "tool_requests_call_idx" ON "tool_requests" USING btree ("call_id");