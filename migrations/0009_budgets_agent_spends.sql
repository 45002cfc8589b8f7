CREATE TABLE "agent_spends" (
	"invocation_id" text NOT NULL,
	"agent" text NOT NULL,
	"model_calls" integer DEFAULT 0 NOT NULL,
	"tokens" bigint DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" double precision DEFAULT 0 NOT NULL,
	"max_tokens" bigint DEFAULT 0 NOT NULL,
	"max_input_tokens" bigint DEFAULT 0 NOT NULL,
	"max_output_tokens" bigint DEFAULT 0 NOT NULL,
	"max_cost_usd" double precision DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_spends_invocation_id_agent_pk" PRIMARY KEY("invocation_id","agent")
);
--> statement-breakpoint
ALTER TABLE "invocations" ADD COLUMN "budget" jsonb;--> statement-breakpoint
ALTER TABLE "agent_spends" ADD CONSTRAINT "agent_spends_invocation_id_invocations_id_fk" FOREIGN KEY ("invocation_id") REFERENCES "public"."invocations"("id") ON DELETE cascade ON UPDATE no action;