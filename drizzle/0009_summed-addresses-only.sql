CREATE TABLE `score_sum_addresses` (
	`ip` text PRIMARY KEY NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
-- Only addresses with many reports keep running sums (docs/decisions.md): those whose sums hold more than 64
-- reports now; the others' sums go, and the scorer reads their reports (it makes sums again for an address that
-- has more than 64 in the retention window). The sums kept are the ones the triggers of 0008 kept.
INSERT INTO score_sum_addresses (ip) SELECT ip FROM reporter_score_sums GROUP BY ip HAVING sum(reports) > 64;
--> statement-breakpoint
DELETE FROM reporter_score_sums WHERE ip NOT IN (SELECT ip FROM score_sum_addresses);
--> statement-breakpoint
DELETE FROM address_category_counts WHERE ip NOT IN (SELECT ip FROM score_sum_addresses);
--> statement-breakpoint
DROP TRIGGER `reports_score_sums_insert`;
--> statement-breakpoint
DROP TRIGGER `reports_score_sums_status`;
--> statement-breakpoint
DROP TRIGGER `reports_score_sums_delete`;
--> statement-breakpoint
-- The triggers of 0008, for the summed addresses only: a report about another address writes nothing more
-- (the probe of this small table is what is left of their cost).
CREATE TRIGGER `reports_score_sums_insert` AFTER INSERT ON `reports`
  WHEN NEW.status IN ('pending', 'verified') AND EXISTS (SELECT 1 FROM score_sum_addresses WHERE ip = NEW.ip) BEGIN
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
  WHEN OLD.status IS NOT NEW.status AND (OLD.status IN ('pending', 'verified') OR NEW.status IN ('pending', 'verified'))
   AND EXISTS (SELECT 1 FROM score_sum_addresses WHERE ip = OLD.ip) BEGIN
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
CREATE TRIGGER `reports_score_sums_delete` AFTER DELETE ON `reports`
  WHEN OLD.status IN ('pending', 'verified') AND EXISTS (SELECT 1 FROM score_sum_addresses WHERE ip = OLD.ip) BEGIN
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
