package io.seglog.spark.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import io.seglog.spark.format.CorruptLogException;

/** The driver's per-partition steps (PartitionWork): results in partition order, every step ended before
 *  run returns, the first failure thrown as raised (its class crosses to Python) with later ones suppressed. */
class PartitionWorkTest {
    private static List<Integer> upTo(int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(i);
        return out;
    }

    @Test
    void resultsComeInPartitionOrder() {
        List<Integer> parts = upTo(32);
        List<Integer> got = PartitionWork.run(parts, p -> {
            sleep((32 - p) % 5);
            return p * 10;
        });
        List<Integer> want = new ArrayList<>();
        for (int p : parts) want.add(p * 10);
        assertEquals(want, got);
    }

    @Test
    void stepsRunAtOnce() throws InterruptedException {
        // two steps that each wait for the other: only concurrent steps both finish
        CountDownLatch both = new CountDownLatch(2);
        List<Boolean> got = PartitionWork.run(upTo(2), p -> {
            both.countDown();
            try {
                return both.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        assertEquals(List.of(true, true), got);
    }

    @Test
    void everyStepHasEndedWhenAFailureIsThrown() {
        AtomicInteger ended = new AtomicInteger();
        CorruptLogException first = new CorruptLogException("partition 1 is damaged");
        ConcurrentHashMap<Integer, Boolean> ran = new ConcurrentHashMap<>();
        CorruptLogException thrown = assertThrows(CorruptLogException.class, () -> PartitionWork.run(upTo(6), p -> {
            ran.put(p, true);
            try {
                if (p == 1) throw first;
                if (p == 4) throw new IllegalStateException("partition 4 failed too");
                sleep(200);          // still running when partition 1 has failed
                return p;
            } finally {
                ended.incrementAndGet();
            }
        }));
        assertSame(first, thrown);   // the very exception, not a wrapper: its class is what Python sees
        assertEquals(6, ran.size());
        assertEquals(6, ended.get(), "run returned while a step was still running");
        assertEquals(1, thrown.getSuppressed().length);
        assertTrue(thrown.getSuppressed()[0].getMessage().contains("partition 4"));
    }

    @Test
    void oneDoesNotLeaveTheCallersThread() {
        Thread caller = Thread.currentThread();
        assertEquals(List.of(true), PartitionWork.run(List.of(7), p -> Thread.currentThread() == caller));
    }

    @Test
    void besideRunsInTheCallerWhileTheStepsRun() throws InterruptedException {
        // a step that waits for beside, and beside that waits for the step: only if both run at once do both finish,
        // also for one partition (which then leaves the caller's thread)
        Thread caller = Thread.currentThread();
        CountDownLatch both = new CountDownLatch(2);
        boolean[] besideRan = new boolean[1];
        List<Boolean> got = PartitionWork.run(List.of(3), p -> {
            both.countDown();
            return await(both) && Thread.currentThread() != caller;
        }, () -> {
            both.countDown();
            besideRan[0] = await(both) && Thread.currentThread() == caller;
        });
        assertEquals(List.of(true), got);
        assertTrue(besideRan[0]);
    }

    @Test
    void aFailureBesideIsThrownOnceEveryStepHasEnded() {
        AtomicInteger ended = new AtomicInteger();
        IllegalStateException beside = new IllegalStateException("the commit file cannot be forced");
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> PartitionWork.run(upTo(3), p -> {
            sleep(200);
            ended.incrementAndGet();
            return p;
        }, () -> {
            throw beside;
        }));
        assertSame(beside, thrown);
        assertEquals(3, ended.get(), "run returned while a step was still running");
        // a step's failure comes first, beside's is suppressed in it
        CorruptLogException step = new CorruptLogException("partition 0 is damaged");
        CorruptLogException first = assertThrows(CorruptLogException.class, () -> PartitionWork.run(upTo(2), p -> {
            if (p == 0) throw step;
            return p;
        }, () -> {
            throw beside;
        }));
        assertSame(step, first);
        assertSame(beside, first.getSuppressed()[0]);
    }

    private static boolean await(CountDownLatch latch) {
        try {
            return latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
