package io.collscope.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Parses durations such as {@code 300us}, {@code 10ms}, {@code 1s}, {@code 2m}, {@code 2h}, {@code
 * 7d} (hours and days for the history's options, e.g. {@code history compact --older-than 2h}).
 */
final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

  private static final Pattern P = Pattern.compile("(\\d+)(ns|us|ms|s|m|h|d)");

  @Override
  public Duration convert(String value) {
    Matcher m = P.matcher(value.trim());
    if (!m.matches()) {
      throw new CommandLine.TypeConversionException(
          "'" + value + "' is not a duration (e.g. 300us, 10ms, 1s, 2m, 2h, 7d)");
    }
    try {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ns" -> Duration.ofNanos(n);
        case "us" -> Duration.ofNanos(Math.multiplyExact(n, 1_000L));
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    } catch (ArithmeticException | NumberFormatException e) {
      throw new CommandLine.TypeConversionException("'" + value + "' is too long a duration");
    }
  }
}
