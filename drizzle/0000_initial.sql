CREATE TABLE `address_change_log` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ip` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `addresses` (
	`ip` text PRIMARY KEY NOT NULL,
	`ip_version` integer NOT NULL,
	`reputation_score` integer NOT NULL,
	`total_reports` integer NOT NULL,
	`verified_reports` integer NOT NULL,
	`categories_mask` integer NOT NULL,
	`last_category` text,
	`first_seen` integer,
	`last_seen` integer,
	`scored_at` integer NOT NULL,
	`rescore_due_at` integer
);
--> statement-breakpoint
CREATE INDEX `addresses_last_seen` ON `addresses` (`last_seen`);--> statement-breakpoint
CREATE INDEX `addresses_rescore_due` ON `addresses` (`rescore_due_at`);--> statement-breakpoint
CREATE TABLE `allowlist` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`cidr` text NOT NULL,
	`note` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`created_by` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `allowlist_cidr_unique` ON `allowlist` (`cidr`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`name` text NOT NULL,
	`prefix` text NOT NULL,
	`key_hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_user` ON `api_keys` (`user_id`);--> statement-breakpoint
CREATE TABLE `credit_balances` (
	`user_id` integer PRIMARY KEY NOT NULL,
	`balance` integer DEFAULT 0 NOT NULL,
	`lifetime_earned` integer DEFAULT 0 NOT NULL,
	`reports_accepted` integer DEFAULT 0 NOT NULL,
	`reports_verified` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `credit_ledger` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`delta` integer NOT NULL,
	`reason` text NOT NULL,
	`report_id` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `credit_ledger_user_id` ON `credit_ledger` (`user_id`,`id`);--> statement-breakpoint
CREATE TABLE `decision_cursors` (
	`api_key_id` integer PRIMARY KEY NOT NULL,
	`last_pull_at` integer NOT NULL,
	`state` blob,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `delivery_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_row_id` integer NOT NULL,
	`attempted_at` integer NOT NULL,
	`status_code` integer,
	`error` text,
	`duration_ms` integer NOT NULL,
	FOREIGN KEY (`delivery_row_id`) REFERENCES `webhook_deliveries`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `delivery_attempts_delivery` ON `delivery_attempts` (`delivery_row_id`);--> statement-breakpoint
CREATE TABLE `feed_entries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`feed_name` text NOT NULL,
	`cidr` text NOT NULL,
	`ip_version` integer NOT NULL,
	`prefix_length` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`feed_name`) REFERENCES `feeds`(`name`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `feed_entries_feed_cidr` ON `feed_entries` (`feed_name`,`cidr`);--> statement-breakpoint
CREATE TABLE `feeds` (
	`name` text PRIMARY KEY NOT NULL,
	`category` text NOT NULL,
	`severity` integer NOT NULL,
	`entry_count` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `job_runs` (
	`name` text PRIMARY KEY NOT NULL,
	`last_run_at` integer,
	`last_duration_ms` integer,
	`last_error` text,
	`last_result` text
);
--> statement-breakpoint
CREATE TABLE `login_failures` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`email` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `login_failures_email_at` ON `login_failures` (`email`,`at`);--> statement-breakpoint
CREATE TABLE `meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event` text NOT NULL,
	`data` text NOT NULL,
	`webhook_id` integer,
	`created_at` integer NOT NULL,
	`fanned_out_at` integer
);
--> statement-breakpoint
CREATE INDEX `outbox_pending` ON `outbox` (`fanned_out_at`,`id`);--> statement-breakpoint
CREATE TABLE `rate_counters` (
	`user_id` integer NOT NULL,
	`day` integer NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`user_id`, `day`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `report_transitions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`report_id` integer NOT NULL,
	`from_status` text,
	`to_status` text NOT NULL,
	`at` integer NOT NULL,
	`actor_user_id` integer,
	`reason` text,
	FOREIGN KEY (`report_id`) REFERENCES `reports`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `report_transitions_report` ON `report_transitions` (`report_id`);--> statement-breakpoint
CREATE TABLE `reports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`ip` text NOT NULL,
	`ip_version` integer NOT NULL,
	`reporter_id` integer NOT NULL,
	`category` text NOT NULL,
	`severity` integer NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`evidence` text,
	`status` text DEFAULT 'pending' NOT NULL,
	`source` text DEFAULT 'api' NOT NULL,
	`created_at` integer NOT NULL,
	`status_changed_at` integer NOT NULL,
	FOREIGN KEY (`reporter_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `reports_ip_created` ON `reports` (`ip`,`created_at`);--> statement-breakpoint
CREATE INDEX `reports_reporter_ip_created` ON `reports` (`reporter_id`,`ip`,`created_at`);--> statement-breakpoint
CREATE INDEX `reports_created` ON `reports` (`created_at`);--> statement-breakpoint
CREATE INDEX `reports_status_created` ON `reports` (`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `threats` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`pattern_key` text NOT NULL,
	`cidr` text,
	`asn` integer,
	`category` text,
	`ip_count` integer NOT NULL,
	`addresses` text NOT NULL,
	`window_start` integer NOT NULL,
	`window_end` integer NOT NULL,
	`detected_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `threats_pattern_detected` ON `threats` (`pattern_key`,`detected_at`);--> statement-breakpoint
CREATE INDEX `threats_detected` ON `threats` (`detected_at`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`email` text NOT NULL,
	`password_hash` text NOT NULL,
	`tier` text DEFAULT 'free' NOT NULL,
	`role` text DEFAULT 'user' NOT NULL,
	`disabled` integer DEFAULT false NOT NULL,
	`daily_limit` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_unique` ON `users` (`email`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` text NOT NULL,
	`outbox_id` integer NOT NULL,
	`webhook_id` integer NOT NULL,
	`event` text NOT NULL,
	`body` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`outbox_id`) REFERENCES `outbox`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_delivery_id` ON `webhook_deliveries` (`delivery_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook` ON `webhook_deliveries` (`webhook_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` integer NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`secret` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhooks_user` ON `webhooks` (`user_id`);