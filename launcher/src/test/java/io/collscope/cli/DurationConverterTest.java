package io.collscope.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

class DurationConverterTest {

  private final DurationConverter converter = new DurationConverter();

  @ParameterizedTest
  @CsvSource({
    "250ns, PT0.00000025S",
    "300us, PT0.0003S",
    "10ms, PT0.01S",
    "1s, PT1S",
    "2m, PT2M",
    "2h, PT2H",
    "7d, PT168H",
    "' 5s ', PT5S"
  })
  void everyUnitTheOptionsUse(String text, String iso) {
    assertThat(converter.convert(text)).isEqualTo(Duration.parse(iso));
  }

  @ParameterizedTest
  @ValueSource(strings = {"2", "2 h", "1.5s", "-1s", "2w", "", "99999999999999999999s"})
  void anythingElseIsAConversionErrorNamingTheValue(String text) {
    assertThatThrownBy(() -> converter.convert(text))
        .isInstanceOf(CommandLine.TypeConversionException.class)
        .hasMessageContaining("'" + text + "'");
  }

  @ParameterizedTest
  @ValueSource(strings = {"9223372036854775807us", "9223372036854775807d"})
  void aDurationTooLongForJavaIsAConversionErrorToo(String text) {
    assertThatThrownBy(() -> converter.convert(text))
        .isInstanceOf(CommandLine.TypeConversionException.class)
        .hasMessageContaining("too long");
  }
}
