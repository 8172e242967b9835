CREATE TABLE `address_category_counts` (
	`ip` text NOT NULL,
	`category` text NOT NULL,
	`reports` integer NOT NULL,
	PRIMARY KEY(`ip`, `category`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `reporter_score_sums` (
	`ip` text NOT NULL,
	`reporter_id` integer NOT NULL,
	`weight` real NOT NULL,
	`reports` integer NOT NULL,
	`verified` integer NOT NULL,
	`oldest` integer NOT NULL,
	`newest` integer NOT NULL,
	`floor` integer NOT NULL,
	PRIMARY KEY(`ip`, `reporter_id`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `score_sum_params` (
	`id` integer PRIMARY KEY NOT NULL,
	`epoch_ms` integer NOT NULL,
	`half_life_ms` real NOT NULL,
	`weight_1` real NOT NULL,
	`weight_2` real NOT NULL,
	`weight_3` real NOT NULL,
	`weight_4` real NOT NULL,
	`weight_5` real NOT NULL,
	`verified_multiplier` real NOT NULL
);

--> statement-breakpoint
-- The sums are in these units; the server rebuilds them when its scoring parameters differ (score-sums.ts).
INSERT INTO `score_sum_params` VALUES (1, 1767225600000, 2592000000.0, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0);
--> statement-breakpoint
INSERT INTO reporter_score_sums (ip, reporter_id, weight, reports, verified, oldest, newest, floor)
  SELECT r.ip, r.reporter_id, sum((SELECT CASE r.severity WHEN 1 THEN weight_1 WHEN 2 THEN weight_2 WHEN 3 THEN weight_3 WHEN 4 THEN weight_4 ELSE weight_5 END
            * CASE WHEN r.status = 'verified' THEN verified_multiplier ELSE 1.0 END * pow(2.0, (r.created_at - epoch_ms) / half_life_ms)
       FROM score_sum_params WHERE id = 1)), count(*), sum(r.status = 'verified'), min(r.created_at), max(r.created_at), -9007199254740991
    FROM reports r WHERE r.status IN ('pending', 'verified') GROUP BY r.ip, r.reporter_id;
--> statement-breakpoint
INSERT INTO address_category_counts (ip, category, reports)
  SELECT ip, category, count(*) FROM reports WHERE status IN ('pending', 'verified') GROUP BY ip, category;
--> statement-breakpoint
-- Every writer of reports keeps the running sums: a new counting report is added, a report that stops counting
-- (rejected, expired, deleted) is taken out, a verification changes its weight. Reports dated before a row's
-- floor are not in it (the scorer took them out when they passed retention).
CREATE TRIGGER `reports_score_sums_insert` AFTER INSERT ON `reports` WHEN NEW.status IN ('pending', 'verified') BEGIN
  INSERT INTO reporter_score_sums (ip, reporter_id, weight, reports, verified, oldest, newest, floor)
    SELECT NEW.ip, NEW.reporter_id, (SELECT CASE NEW.severity WHEN 1 THEN weight_1 WHEN 2 THEN weight_2 WHEN 3 THEN weight_3 WHEN 4 THEN weight_4 ELSE weight_5 END
            * CASE WHEN NEW.status = 'verified' THEN verified_multiplier ELSE 1.0 END * pow(2.0, (NEW.created_at - epoch_ms) / half_life_ms)
       FROM score_sum_params WHERE id = 1), 1, NEW.status = 'verified', NEW.created_at, NEW.created_at, -9007199254740991 WHERE 1
    ON CONFLICT (ip, reporter_id) DO UPDATE SET weight = weight + excluded.weight, reports = reports + 1, verified = verified + excluded.verified,
      oldest = min(oldest, excluded.oldest), newest = max(newest, excluded.newest)
    WHERE excluded.oldest >= floor;
  INSERT INTO address_category_counts (ip, category, reports)
    SELECT NEW.ip, NEW.category, 1 WHERE 1 AND NEW.created_at >= (SELECT floor FROM reporter_score_sums WHERE ip = NEW.ip AND reporter_id = NEW.reporter_id)
    ON CONFLICT (ip, category) DO UPDATE SET reports = reports + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `reports_score_sums_status` AFTER UPDATE OF `status` ON `reports`
  WHEN OLD.status IS NOT NEW.status AND (OLD.status IN ('pending', 'verified') OR NEW.status IN ('pending', 'verified')) BEGIN
  UPDATE address_category_counts SET reports = reports - 1
   WHERE OLD.status IN ('pending', 'verified') AND ip = OLD.ip AND category = OLD.category
     AND OLD.created_at >= (SELECT floor FROM reporter_score_sums WHERE ip = OLD.ip AND reporter_id = OLD.reporter_id);
  UPDATE reporter_score_sums
     SET weight = CASE WHEN reports <= 1 THEN 0.0 ELSE max(0.0, weight - (SELECT CASE OLD.severity WHEN 1 THEN weight_1 WHEN 2 THEN weight_2 WHEN 3 THEN weight_3 WHEN 4 THEN weight_4 ELSE weight_5 END
            * CASE WHEN OLD.status = 'verified' THEN verified_multiplier ELSE 1.0 END * pow(2.0, (OLD.created_at - epoch_ms) / half_life_ms)
       FROM score_sum_params WHERE id = 1)) END,
         reports = reports - 1, verified = verified - (OLD.status = 'verified')
   WHERE OLD.status IN ('pending', 'verified') AND ip = OLD.ip AND reporter_id = OLD.reporter_id AND OLD.created_at >= floor;
  INSERT INTO reporter_score_sums (ip, reporter_id, weight, reports, verified, oldest, newest, floor)
    SELECT NEW.ip, NEW.reporter_id, (SELECT CASE NEW.severity WHEN 1 THEN weight_1 WHEN 2 THEN weight_2 WHEN 3 THEN weight_3 WHEN 4 THEN weight_4 ELSE weight_5 END
            * CASE WHEN NEW.status = 'verified' THEN verified_multiplier ELSE 1.0 END * pow(2.0, (NEW.created_at - epoch_ms) / half_life_ms)
       FROM score_sum_params WHERE id = 1), 1, NEW.status = 'verified', NEW.created_at, NEW.created_at, -9007199254740991 WHERE NEW.status IN ('pending', 'verified')
    ON CONFLICT (ip, reporter_id) DO UPDATE SET weight = weight + excluded.weight, reports = reports + 1, verified = verified + excluded.verified,
      oldest = min(oldest, excluded.oldest), newest = max(newest, excluded.newest)
    WHERE excluded.oldest >= floor;
  INSERT INTO address_category_counts (ip, category, reports)
    SELECT NEW.ip, NEW.category, 1 WHERE NEW.status IN ('pending', 'verified') AND NEW.created_at >= (SELECT floor FROM reporter_score_sums WHERE ip = NEW.ip AND reporter_id = NEW.reporter_id)
    ON CONFLICT (ip, category) DO UPDATE SET reports = reports + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `reports_score_sums_delete` AFTER DELETE ON `reports` WHEN OLD.status IN ('pending', 'verified') BEGIN
  UPDATE address_category_counts SET reports = reports - 1
   WHERE 1 AND ip = OLD.ip AND category = OLD.category
     AND OLD.created_at >= (SELECT floor FROM reporter_score_sums WHERE ip = OLD.ip AND reporter_id = OLD.reporter_id);
  UPDATE reporter_score_sums
     SET weight = CASE WHEN reports <= 1 THEN 0.0 ELSE max(0.0, weight - (SELECT CASE OLD.severity WHEN 1 THEN weight_1 WHEN 2 THEN weight_2 WHEN 3 THEN weight_3 WHEN 4 THEN weight_4 ELSE weight_5 END
            * CASE WHEN OLD.status = 'verified' THEN verified_multiplier ELSE 1.0 END * pow(2.0, (OLD.created_at - epoch_ms) / half_life_ms)
       FROM score_sum_params WHERE id = 1)) END,
         reports = reports - 1, verified = verified - (OLD.status = 'verified')
   WHERE 1 AND ip = OLD.ip AND reporter_id = OLD.reporter_id AND OLD.created_at >= floor;
END;

--> statement-breakpoint
DROP INDEX `addresses_last_seen`;--> statement-breakpoint
CREATE INDEX `addresses_last_seen_ip` ON `addresses` ("last_seen" DESC,`ip`);