package io.collscope.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in README.md, dev/README.md, recordings/README.md and every page under docs/
 * points at a file that exists, and every {@code #anchor} into a Markdown page at one of its
 * headings (GitHub's anchors). Links in fenced code blocks and to other schemes are not checked.
 */
class DocsLinksTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");

  @Test
  void everyRelativeLinkResolves() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(ROOT.resolve("README.md"));
    pages.add(ROOT.resolve("dev/README.md"));
    pages.add(ROOT.resolve("recordings/README.md"));
    // Every page under docs/, the run folders' and the tables' READMEs included.
    try (Stream<Path> s = Files.walk(ROOT.resolve("docs"))) {
      s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    List<String> broken = new ArrayList<>();
    for (Path page : pages) {
      assertThat(page).exists();
      boolean fenced = false;
      int n = 0;
      for (String line : Files.readAllLines(page)) {
        n++;
        if (line.stripLeading().startsWith("```")) {
          fenced = !fenced;
          continue;
        }
        if (fenced) continue;
        Matcher m = LINK.matcher(line);
        while (m.find()) {
          String problem = check(page, m.group(1));
          if (problem != null) broken.add(ROOT.relativize(page) + ":" + n + ": " + problem);
        }
      }
    }
    assertThat(broken).as("broken links").isEmpty();
  }

  private static String check(Path page, String target) throws IOException {
    if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) return null; // http:, mailto:, ...
    int hash = target.indexOf('#');
    String file = hash < 0 ? target : target.substring(0, hash);
    String anchor = hash < 0 ? null : target.substring(hash + 1);
    Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
    if (!Files.exists(resolved)) return target + ": no such file";
    if (anchor != null && resolved.toString().endsWith(".md")) {
      if (!anchors(resolved).contains(anchor)) return target + ": no such heading";
    }
    return null;
  }

  /** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
  static Set<String> anchors(Path md) throws IOException {
    Set<String> out = new HashSet<>();
    boolean fenced = false;
    for (String line : Files.readAllLines(md)) {
      if (line.stripLeading().startsWith("```")) fenced = !fenced;
      if (fenced || !line.startsWith("#")) continue;
      String text = line.replaceFirst("^#+\\s*", "").strip();
      String slug =
          text.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
      String unique = slug;
      for (int i = 1; out.contains(unique); i++) unique = slug + "-" + i;
      out.add(unique);
    }
    return out;
  }
}
