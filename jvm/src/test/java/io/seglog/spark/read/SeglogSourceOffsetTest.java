package io.seglog.spark.read;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Item 15 of issue 23: checkpointed offsets are Kafka's JSON; anything else is refused, naming it. */
class SeglogSourceOffsetTest {
    @Test
    void roundTrip() {
        SeglogSourceOffset o = new SeglogSourceOffset(Map.of("events", Map.of(0, 23L, 1, 45L), "b", Map.of(3, 0L)));
        assertEquals("{\"b\":{\"3\":0},\"events\":{\"0\":23,\"1\":45}}", o.json());
        assertEquals(o.json(), SeglogSourceOffset.fromJson(o.json()).json());
    }

    @Test
    void topicIdsRoundTripAndTellATopicCreatedAgain() {
        String a = "0f8fad5b-d9cb-469f-a165-70867728950e", b = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
        SeglogSourceOffset o = new SeglogSourceOffset(Map.of("t", Map.of(0, 5L)), Map.of("t", a));
        assertEquals("{\"@topicIds\":{\"t\":\"" + a + "\"},\"t\":{\"0\":5}}", o.json());
        assertEquals(o.json(), SeglogSourceOffset.fromJson(o.json()).json());
        assertTrue(o.recreated("t", new SeglogSourceOffset(Map.of("t", Map.of(0, 5L)), Map.of("t", b))));
        assertFalse(o.recreated("t", new SeglogSourceOffset(Map.of("t", Map.of(0, 9L)), Map.of("t", a))));
        // a checkpoint written before topic ids: nothing to compare, read as before
        SeglogSourceOffset old = SeglogSourceOffset.fromJson("{\"t\":{\"0\":5}}");
        assertFalse(old.recreated("t", o));
        assertFalse(o.recreated("t", old));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "{\"t\":{\"0\":\"abc\"}}|t-0",
        "{\"t\":{\"0\":1.5}}|t-0",
        "{\"t\":{\"0\":null}}|t-0",
        "{\"t\":{\"0\":true}}|t-0",
        "{\"t\":{\"0\":123456789012345678901234567890}}|t-0",
        "{\"t\":{\"x\":5}}|'x'",
        "{\"t\":5}|'t'",
        "[1,2]|offsets",
        "{\"@topicIds\":{\"t\":\"x\"},\"t\":{\"0\":5}}|'t'",
        "{\"@topicIds\":{\"u\":\"0f8fad5b-d9cb-469f-a165-70867728950e\"},\"t\":{\"0\":5}}|'u'",
        "{\"@topicIds\":5,\"t\":{\"0\":5}}|@topicIds",
    })
    void aValueThatIsNotAnOffsetIsRefusedNamingIt(String json, String named) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SeglogSourceOffset.fromJson(json));
        assertTrue(e.getMessage().contains(named), e.getMessage());
        assertTrue(e.getMessage().contains(json), e.getMessage());
    }
}
