"""seglog configuration: the topic defaults users copy (topic.yaml, compactor.yaml) and their validation."""
from seglog.conf.topic_config import TOPIC_DEFAULTS, TopicConfig, validate_topic_config
from seglog.conf.files import default_file, load_yaml

__all__ = ["TOPIC_DEFAULTS", "TopicConfig", "validate_topic_config", "default_file", "load_yaml"]
