CREATE TABLE "credentials" (
	"app" text NOT NULL,
	"user_id" text NOT NULL,
	"credential_key" text NOT NULL,
	"auth_type" text NOT NULL,
	"secret" "bytea" NOT NULL,
	"expires_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "credentials_app_user_id_credential_key_pk" PRIMARY KEY("app","user_id","credential_key")
);
