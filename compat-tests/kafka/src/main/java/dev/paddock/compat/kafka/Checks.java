package dev.paddock.compat.kafka;

import java.util.ArrayList;
import java.util.List;

/**
 * The suite's check list and its ok/FAIL lines. Every check is named up front, so that a scenario that
 * has to stop early (its later steps would act on an unknown cluster state) still prints one FAIL line
 * per check it never reached, and the counts stay honest.
 */
final class Checks {
    /** A failed expectation: the check fails, the scenario goes on. */
    static final class Fail extends RuntimeException {
        Fail(String message) {
            super(message);
        }
    }

    /** A failure after which the next steps make no sense: the check fails and the scenario stops. */
    static final class Abort extends RuntimeException {
        Abort(String message) {
            super(message);
        }

        Abort(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A check's body; it returns a detail for the ok line (a measured time, say), or null. */
    interface Body {
        String run() throws Exception;
    }

    private final List<String> names;
    private final List<String> done = new ArrayList<>();
    private int passed;
    private int failed;

    Checks(List<String> names) {
        this.names = names;
    }

    static void expect(boolean condition, String message) {
        if (!condition) {
            throw new Fail(message);
        }
    }

    static void require(boolean condition, String message) {
        if (!condition) {
            throw new Abort(message);
        }
    }

    /** Runs one named check; an Abort (or any unexpected exception) is rethrown as Abort after the FAIL line. */
    void run(String name, Body body) {
        if (!names.contains(name) || done.contains(name)) {
            throw new IllegalStateException("check not declared or run twice: " + name);
        }
        done.add(name);
        long start = System.nanoTime();
        try {
            String detail = body.run();
            passed++;
            System.out.printf("ok %s (%.1fs)%s%n", name, seconds(start), detail == null ? "" : ": " + detail);
        } catch (Fail e) {
            failed++;
            System.out.printf("FAIL %s: %s%n", name, e.getMessage());
        } catch (Abort e) {
            failed++;
            System.out.printf("FAIL %s: %s%n", name, e.getMessage());
            throw e;
        } catch (Exception e) {
            failed++;
            System.out.printf("FAIL %s: unexpected %s%n", name, e);
            e.printStackTrace(System.err);
            throw new Abort(name + " threw", e);
        }
        System.out.flush();
    }

    /** After an Abort: one FAIL line for every declared check that did not run. */
    void notReached(String why) {
        for (String name : names) {
            if (!done.contains(name)) {
                done.add(name);
                failed++;
                System.out.printf("FAIL %s: not reached (%s)%n", name, why);
            }
        }
    }

    int passed() {
        return passed;
    }

    int failed() {
        return failed;
    }

    static double seconds(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e9;
    }
}
