package io.collscope.history;

import io.collscope.flink.history.HistoryLayout;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;

/**
 * A half-open range of event time {@code [from, to)} ({@code to} null: open) as a SQL filter that
 * DuckDB applies to the partition columns first, so the files of other hours are never opened.
 */
public record TimeRange(Instant from, Instant to) {

  public TimeRange {
    if (from == null) throw new IllegalArgumentException("a range needs a start");
    if (to != null && !to.isAfter(from)) {
      throw new IllegalArgumentException("range end " + to + " is not after its start " + from);
    }
  }

  /** The last {@code d} before {@code now}, and whatever lies after now (clock skew). */
  public static TimeRange since(Duration d, Instant now) {
    return new TimeRange(now.minus(d), null);
  }

  /**
   * A range from the command line: {@code START/END} (ISO-8601 interval; each an instant such as
   * {@code 2026-11-30T07:00:00Z}, a UTC date-time {@code 2026-11-30T07:00}, a date, or {@code -24h}
   * for 24 hours before now), or a date alone for that whole UTC day.
   */
  public static TimeRange parse(String s, Instant now) {
    String t = s.trim();
    int slash = t.indexOf('/');
    if (slash < 0) {
      try {
        LocalDate d = LocalDate.parse(t);
        return new TimeRange(
            d.atStartOfDay().toInstant(ZoneOffset.UTC),
            d.plusDays(1).atStartOfDay().toInstant(ZoneOffset.UTC));
      } catch (DateTimeParseException e) {
        throw new IllegalArgumentException(
            "'"
                + s
                + "' is not a range (START/END, e.g. 2026-11-30T00:00Z/2026-11-30T06:00Z or"
                + " -48h/-24h, or a date)");
      }
    }
    return new TimeRange(instant(t.substring(0, slash), now), instant(t.substring(slash + 1), now));
  }

  /** An instant, a UTC date-time or date, or {@code -DURATION} before now ({@code now}: now). */
  public static Instant instant(String s, Instant now) {
    String t = s.trim();
    if (t.equals("now")) return now;
    if (t.startsWith("-")) return now.minus(durationOf(t.substring(1)));
    try {
      return Instant.parse(t);
    } catch (DateTimeParseException e) {
      // not with a zone: UTC
    }
    try {
      return LocalDateTime.parse(t.endsWith("Z") ? t.substring(0, t.length() - 1) : t)
          .toInstant(ZoneOffset.UTC);
    } catch (DateTimeParseException e) {
      // not a date-time
    }
    try {
      return LocalDate.parse(t).atStartOfDay().toInstant(ZoneOffset.UTC);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException(
          "'" + s + "' is not a time (2026-11-30T07:00:00Z, 2026-11-30T07:00, 2026-11-30, -24h)");
    }
  }

  /** {@code 90s}, {@code 30m}, {@code 24h}, {@code 7d}, {@code 2w}. */
  public static Duration durationOf(String s) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)(ms|s|m|h|d|w)").matcher(s);
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + s + "' is not a duration (e.g. 30m, 24h, 7d, 2w)");
    }
    long n = Long.parseLong(m.group(1));
    return switch (m.group(2)) {
      case "ms" -> Duration.ofMillis(n);
      case "s" -> Duration.ofSeconds(n);
      case "m" -> Duration.ofMinutes(n);
      case "h" -> Duration.ofHours(n);
      case "d" -> Duration.ofDays(n);
      default -> Duration.ofDays(7 * n);
    };
  }

  /**
   * The filter for a table whose partition is the hour of {@code timeColumn} (an expression):
   * partition columns first, so DuckDB prunes whole hours, then the exact bounds.
   */
  public String where(String timeColumn) {
    StringBuilder sb = new StringBuilder("(");
    sb.append(partitionAtLeast(from));
    if (to != null) sb.append(" AND ").append(partitionAtMost(to.minusMillis(1)));
    sb.append(" AND ").append(timeColumn).append(" >= ").append(timestamp(from));
    if (to != null) sb.append(" AND ").append(timeColumn).append(" < ").append(timestamp(to));
    return sb.append(")").toString();
  }

  /** Whether {@code t} lies in the range. */
  public boolean contains(Instant t) {
    return !t.isBefore(from) && (to == null || t.isBefore(to));
  }

  public static String timestamp(Instant t) {
    return "TIMESTAMPTZ '" + t + "'";
  }

  private static String partitionAtLeast(Instant t) {
    String d = date(t);
    int h = hour(t);
    return "(" + DT + " > " + d + " OR (" + DT + " = " + d + " AND " + HOUR + " >= " + h + "))";
  }

  private static String partitionAtMost(Instant t) {
    String d = date(t);
    int h = hour(t);
    return "(" + DT + " < " + d + " OR (" + DT + " = " + d + " AND " + HOUR + " <= " + h + "))";
  }

  private static final String DT = HistoryLayout.DATE_COLUMN;
  private static final String HOUR = HistoryLayout.HOUR_COLUMN;

  private static String date(Instant t) {
    return "DATE '" + LocalDate.ofInstant(t, ZoneOffset.UTC) + "'";
  }

  private static int hour(Instant t) {
    return LocalDateTime.ofInstant(t, ZoneOffset.UTC).getHour();
  }

  @Override
  public String toString() {
    return "[" + from + ", " + (to == null ? "now" : to) + ")";
  }
}
