/**
 * Word tables for the demo catalog. Titles and names are assembled from these pieces, so they read
 * like visual-novel titles in each script without copying any real title. Each entry is
 * `[written form, romanization]`.
 */

export type Word = readonly [string, string]

export const jaKanji: ReadonlyArray<Word> = [
  ["恋", "koi"],
  ["夏", "natsu"],
  ["空", "sora"],
  ["花", "hana"],
  ["月", "tsuki"],
  ["星", "hoshi"],
  ["雪", "yuki"],
  ["桜", "sakura"],
  ["夢", "yume"],
  ["海", "umi"],
  ["風", "kaze"],
  ["光", "hikari"],
  ["影", "kage"],
  ["声", "koe"],
  ["約束", "yakusoku"],
  ["記憶", "kioku"],
  ["永遠", "eien"],
  ["世界", "sekai"],
  ["物語", "monogatari"],
  ["奇跡", "kiseki"],
  ["少女", "shoujo"],
  ["天使", "tenshi"],
  ["魔法", "mahou"],
  ["学園", "gakuen"],
  ["放課後", "houkago"],
  ["未来", "mirai"],
  ["季節", "kisetsu"],
  ["願い", "negai"],
  ["翼", "tsubasa"],
  ["硝子", "garasu"],
  ["境界", "kyoukai"],
  ["黄昏", "tasogare"],
  ["水平線", "suiheisen"],
  ["向日葵", "himawari"],
  ["蒼穹", "soukyuu"],
  ["螺旋", "rasen"],
  ["残響", "zankyou"],
  ["幻想", "gensou"],
  ["迷宮", "meikyuu"],
  ["終末", "shuumatsu"],
  ["楽園", "rakuen"],
  ["秘密", "himitsu"],
  ["紅", "kurenai"],
  ["蒼", "ao"],
  ["銀", "gin"],
  ["金色", "konjiki"],
  ["灰色", "haiiro"],
  ["夜空", "yozora"],
  ["朝顔", "asagao"],
  ["灯火", "tomoshibi"],
  ["花火", "hanabi"],
  ["鈴音", "suzune"],
  ["時計", "tokei"],
  ["図書館", "toshokan"],
  ["列車", "ressha"],
  ["坂道", "sakamichi"],
  ["旋律", "senritsu"],
  ["群青", "gunjou"],
  ["陽炎", "kagerou"],
  ["白昼夢", "hakuchuumu"],
  ["月光", "gekkou"],
  ["神様", "kamisama"],
  ["妹", "imouto"],
  ["彼女", "kanojo"],
  ["恋人", "koibito"],
  ["明日", "ashita"],
  ["心", "kokoro"],
  ["雨", "ame"],
  ["春", "haru"],
  ["秋", "aki"],
  ["冬", "fuyu"]
]

export const jaKana: ReadonlyArray<Word> = [
  ["メモリー", "memorii"],
  ["ファンタジア", "fantajia"],
  ["エターナル", "etaanaru"],
  ["ノスタルジア", "nosutarujia"],
  ["パレット", "paretto"],
  ["シンフォニー", "shinfonii"],
  ["ステラ", "sutera"],
  ["ルミナス", "ruminasu"],
  ["アリア", "aria"],
  ["クロニクル", "kuronikuru"],
  ["ソナタ", "sonata"],
  ["ワールド", "waarudo"],
  ["ガーデン", "gaaden"],
  ["ドリーム", "doriimu"],
  ["ハート", "haato"],
  ["リグレット", "riguretto"],
  ["プリズム", "purizumu"],
  ["カレイド", "kareido"],
  ["スカーレット", "sukaaretto"],
  ["ラブ", "rabu"],
  ["きみ", "kimi"],
  ["ぼくら", "bokura"],
  ["あした", "ashita"],
  ["ひだまり", "hidamari"],
  ["はるか", "haruka"],
  ["こころ", "kokoro"],
  ["なつやすみ", "natsuyasumi"],
  ["かなた", "kanata"],
  ["さよなら", "sayonara"],
  ["ふたり", "futari"]
]

export const jaTails: ReadonlyArray<Word> = [
  ["を探して", "o sagashite"],
  ["が降る", "ga furu"],
  ["の彼方へ", "no kanata e"],
  ["に咲く", "ni saku"],
  ["は眠らない", "wa nemuranai"],
  ["と君の", "to kimi no"],
  ["をもう一度", "o mou ichido"],
  ["の向こう側", "no mukougawa"],
  ["が消えた日", "ga kieta hi"],
  ["に恋する", "ni koisuru"]
]

export const zhWords: ReadonlyArray<Word> = [
  ["江湖", "Jiang Hu"],
  ["仙", "Xian"],
  ["剑", "Jian"],
  ["梦", "Meng"],
  ["月", "Yue"],
  ["心", "Xin"],
  ["城", "Cheng"],
  ["春", "Chun"],
  ["秋", "Qiu"],
  ["雪", "Xue"],
  ["花", "Hua"],
  ["影", "Ying"],
  ["星", "Xing"],
  ["光", "Guang"],
  ["风", "Feng"],
  ["云", "Yun"],
  ["少女", "Shao Nü"],
  ["恋人", "Lian Ren"],
  ["回忆", "Hui Yi"],
  ["未来", "Wei Lai"],
  ["故事", "Gu Shi"],
  ["约定", "Yue Ding"],
  ["世界", "Shi Jie"],
  ["天空", "Tian Kong"],
  ["时光", "Shi Guang"],
  ["旅人", "Lü Ren"],
  ["长安", "Chang An"],
  ["烟雨", "Yan Yu"],
  ["琉璃", "Liu Li"],
  ["青梅", "Qing Mei"],
  ["千年", "Qian Nian"],
  ["归途", "Gui Tu"]
]

export const zhHantWords: ReadonlyArray<Word> = [
  ["劍", "Jian"],
  ["夢", "Meng"],
  ["雲", "Yun"],
  ["回憶", "Hui Yi"],
  ["約定", "Yue Ding"],
  ["時光", "Shi Guang"],
  ["戀人", "Lian Ren"],
  ["風", "Feng"],
  ["星", "Xing"],
  ["城", "Cheng"],
  ["琉璃", "Liu Li"],
  ["煙雨", "Yan Yu"]
]

export const koWords: ReadonlyArray<Word> = [
  ["사랑", "Sarang"],
  ["여름", "Yeoreum"],
  ["별", "Byeol"],
  ["꿈", "Kkum"],
  ["하늘", "Haneul"],
  ["바다", "Bada"],
  ["기억", "Gieok"],
  ["약속", "Yaksok"],
  ["소녀", "Sonyeo"],
  ["비밀", "Bimil"],
  ["이야기", "Iyagi"],
  ["세계", "Segye"],
  ["달", "Dal"],
  ["봄", "Bom"],
  ["겨울", "Gyeoul"],
  ["시간", "Sigan"],
  ["마법", "Mabeop"],
  ["천사", "Cheonsa"],
  ["정원", "Jeongwon"],
  ["노래", "Norae"]
]

export const ruWords: ReadonlyArray<Word> = [
  ["Лето", "Leto"],
  ["Звезда", "Zvezda"],
  ["Память", "Pamyat"],
  ["Сон", "Son"],
  ["Тень", "Ten"],
  ["Город", "Gorod"],
  ["Свет", "Svet"],
  ["Зима", "Zima"],
  ["Море", "More"],
  ["Ветер", "Veter"]
]

export const enAdjectives: ReadonlyArray<string> = [
  "Eternal",
  "Crimson",
  "Silent",
  "Forgotten",
  "Endless",
  "Azure",
  "Hollow",
  "Last",
  "Broken",
  "Golden",
  "Distant",
  "Fading",
  "Secret",
  "Midnight",
  "Scarlet",
  "Paper",
  "Glass",
  "Starlit",
  "Winter",
  "Summer",
  "Little",
  "Lost",
  "Wandering",
  "Clockwork"
]

export const enNouns: ReadonlyArray<string> = [
  "Requiem",
  "Garden",
  "Memories",
  "Promise",
  "Horizon",
  "Sonata",
  "Labyrinth",
  "Lullaby",
  "Sky",
  "Tomorrow",
  "Heart",
  "Stars",
  "Station",
  "Melody",
  "Letters",
  "Library",
  "Festival",
  "Island",
  "Witch",
  "Princess",
  "Lighthouse",
  "Moon",
  "Rain",
  "Wings",
  "Dream",
  "Shrine",
  "Bell",
  "Season"
]

export const esWords: ReadonlyArray<string> = ["Luna", "Sueño", "Verano", "Estrella", "Memoria", "Jardín", "Cielo"]

export const jaFamily: ReadonlyArray<Word> = [
  ["桜井", "Sakurai"],
  ["高橋", "Takahashi"],
  ["佐藤", "Satou"],
  ["鈴木", "Suzuki"],
  ["水瀬", "Minase"],
  ["月島", "Tsukishima"],
  ["朝倉", "Asakura"],
  ["白石", "Shiraishi"],
  ["柊", "Hiiragi"],
  ["藤原", "Fujiwara"],
  ["神崎", "Kanzaki"],
  ["橘", "Tachibana"],
  ["天野", "Amano"],
  ["一ノ瀬", "Ichinose"],
  ["如月", "Kisaragi"],
  ["望月", "Mochizuki"],
  ["七海", "Nanami"],
  ["日向", "Hinata"],
  ["早乙女", "Saotome"],
  ["小鳥遊", "Takanashi"],
  ["結城", "Yuuki"],
  ["霧島", "Kirishima"],
  ["秋山", "Akiyama"],
  ["春日", "Kasuga"],
  ["真田", "Sanada"],
  ["宮野", "Miyano"]
]

export const jaGivenFemale: ReadonlyArray<Word> = [
  ["美咲", "Misaki"],
  ["陽菜", "Hina"],
  ["凛", "Rin"],
  ["葵", "Aoi"],
  ["結衣", "Yui"],
  ["真白", "Mashiro"],
  ["千尋", "Chihiro"],
  ["琴音", "Kotone"],
  ["雫", "Shizuku"],
  ["愛理", "Airi"],
  ["彩", "Aya"],
  ["紗希", "Saki"],
  ["遥", "Haruka"],
  ["栞", "Shiori"],
  ["柚子", "Yuzu"],
  ["茜", "Akane"],
  ["鈴", "Suzu"],
  ["楓", "Kaede"],
  ["小春", "Koharu"],
  ["ひより", "Hiyori"],
  ["ミア", "Mia"],
  ["澪", "Mio"],
  ["詩織", "Shiori"],
  ["恵", "Megumi"]
]

export const jaGivenMale: ReadonlyArray<Word> = [
  ["悠斗", "Yuuto"],
  ["翔", "Shou"],
  ["蓮", "Ren"],
  ["大和", "Yamato"],
  ["湊", "Minato"],
  ["隼人", "Hayato"],
  ["拓海", "Takumi"],
  ["和也", "Kazuya"],
  ["直樹", "Naoki"],
  ["誠", "Makoto"],
  ["透", "Tooru"],
  ["恭介", "Kyousuke"]
]

export const zhFamily: ReadonlyArray<Word> = [
  ["李", "Li"],
  ["王", "Wang"],
  ["张", "Zhang"],
  ["林", "Lin"],
  ["苏", "Su"],
  ["沈", "Shen"],
  ["叶", "Ye"],
  ["顾", "Gu"],
  ["萧", "Xiao"],
  ["陆", "Lu"]
]

export const zhGiven: ReadonlyArray<Word> = [
  ["若雪", "Ruoxue"],
  ["清歌", "Qingge"],
  ["婉儿", "Wan'er"],
  ["子轩", "Zixuan"],
  ["思远", "Siyuan"],
  ["月华", "Yuehua"],
  ["晓梦", "Xiaomeng"],
  ["云裳", "Yunshang"],
  ["墨白", "Mobai"],
  ["念安", "Nian'an"]
]

export const koFamily: ReadonlyArray<Word> = [
  ["김", "Kim"],
  ["이", "Lee"],
  ["박", "Park"],
  ["최", "Choi"],
  ["정", "Jung"],
  ["한", "Han"],
  ["윤", "Yoon"],
  ["서", "Seo"]
]

export const koGiven: ReadonlyArray<Word> = [
  ["서연", "Seoyeon"],
  ["지우", "Jiwoo"],
  ["하은", "Haeun"],
  ["민준", "Minjun"],
  ["예린", "Yerin"],
  ["도윤", "Doyun"],
  ["수아", "Sua"],
  ["유나", "Yuna"]
]

export const enGivenFemale: ReadonlyArray<string> = [
  "Alice",
  "Emily",
  "Claire",
  "Luna",
  "Iris",
  "Sophie",
  "Elise",
  "Nora",
  "Vivian",
  "Ada"
]
export const enGivenMale: ReadonlyArray<string> = ["Victor", "Leon", "Arthur", "Elias", "Julian", "Oscar", "Felix"]
export const enFamily: ReadonlyArray<string> = [
  "Ashford",
  "Whitmore",
  "Hale",
  "Blackwood",
  "Sinclair",
  "Everly",
  "Rowan",
  "Carter",
  "Winslow",
  "Hart"
]

export const companyJaSuffix: ReadonlyArray<Word> = [
  ["ソフト", "Soft"],
  ["ハウス", "House"],
  ["ゲームズ", "Games"],
  ["工房", "Koubou"],
  ["スタジオ", "Studio"],
  ["ワークス", "Works"]
]
export const companyEnSuffix: ReadonlyArray<string> = [
  "Soft",
  "Games",
  "Works",
  "Studio",
  "Entertainment",
  "Interactive"
]

export const engineNames: ReadonlyArray<string> = [
  "Kirameki",
  "Lumen",
  "Yuzu",
  "Sakura",
  "Hoshi",
  "Novel",
  "Aoi",
  "Tsukiyo",
  "Inkwell",
  "Kaleido",
  "Petal",
  "Nocturne",
  "Ribbon",
  "Lantern",
  "Quill",
  "Mirage",
  "Tessera",
  "Comet",
  "Hinoki",
  "Marble"
]
export const engineSuffixes: ReadonlyArray<string> = [
  "Engine",
  "Script",
  "VN",
  "Core",
  "Player",
  "Forge",
  "System",
  "Runtime",
  "Studio",
  "Kit"
]

export const tagSubjects: ReadonlyArray<string> = [
  "Heroine",
  "Protagonist",
  "Sister",
  "Childhood Friend",
  "Senpai",
  "Kouhai",
  "Teacher",
  "Maid",
  "Idol",
  "Detective",
  "Witch",
  "Vampire",
  "Android",
  "Ghost",
  "Princess",
  "Knight",
  "Shrine Maiden",
  "Student Council President",
  "Transfer Student",
  "Twin"
]
export const tagModifiers: ReadonlyArray<string> = [
  "Tsundere",
  "Kuudere",
  "Amnesiac",
  "Cursed",
  "Time-Traveling",
  "Immortal",
  "Blind",
  "Sickly",
  "Rich",
  "Genius",
  "Clumsy",
  "Cheerful",
  "Mysterious",
  "Lonely",
  "Older",
  "Younger"
]
export const tagSettings: ReadonlyArray<string> = [
  "School",
  "Island",
  "Small Town",
  "Space",
  "Post-Apocalyptic World",
  "Fantasy World",
  "Café",
  "Hospital",
  "Shrine",
  "Mansion",
  "Summer Festival",
  "Winter",
  "Countryside",
  "Virtual Reality",
  "Cyberpunk City"
]
export const tagThemes: ReadonlyArray<string> = [
  "Time Loop",
  "Amnesia",
  "Parallel Worlds",
  "Unrequited Love",
  "Coming of Age",
  "Family Drama",
  "Mystery",
  "Horror",
  "Comedy",
  "Tragedy",
  "Romance",
  "Slice of Life",
  "Revenge",
  "Survival",
  "War",
  "Friendship"
]
export const tagTechnical: ReadonlyArray<string> = [
  "Multiple Endings",
  "Kinetic Novel",
  "ADV",
  "NVL",
  "Branching Plot",
  "Mini-games",
  "Point-and-Click",
  "Fully Voiced Protagonist",
  "Animated Sprites",
  "Live2D",
  "No Choices",
  "Bad Endings",
  "Nameable Protagonist",
  "Unlockable Routes",
  "CG Gallery",
  "Episodic",
  "Flowchart",
  "Dating Sim Elements",
  "RPG Elements",
  "Puzzle Elements"
]
export const tagSexual: ReadonlyArray<string> = [
  "Sexual Content",
  "Explicit Scenes",
  "Romantic Intimacy",
  "Suggestive Themes",
  "Adult Relationship",
  "Fan Service"
]

export const traitGroups: ReadonlyArray<readonly [string, string, ReadonlyArray<string>, boolean]> = [
  ["Hair", "髪", [
    "Black Hair",
    "Brown Hair",
    "Blond Hair",
    "Red Hair",
    "Blue Hair",
    "Green Hair",
    "Pink Hair",
    "Purple Hair",
    "Silver Hair",
    "White Hair",
    "Long Hair",
    "Short Hair",
    "Twin Tails",
    "Ponytail",
    "Braid",
    "Ahoge",
    "Hime Cut"
  ], false],
  ["Eyes", "目", [
    "Black Eyes",
    "Brown Eyes",
    "Blue Eyes",
    "Green Eyes",
    "Red Eyes",
    "Violet Eyes",
    "Heterochromia",
    "Tsurime",
    "Tareme"
  ], false],
  ["Body", "体", ["Tall", "Short", "Slim", "Pale", "Tanned", "Freckles", "Scar", "Glasses", "Ribbon"], false],
  ["Clothes", "服装", [
    "School Uniform",
    "Maid Outfit",
    "Kimono",
    "Hoodie",
    "Cardigan",
    "Swimsuit",
    "Armor",
    "Lab Coat",
    "Hair Clip"
  ], false],
  ["Personality", "性格", [
    "Tsundere",
    "Kuudere",
    "Dandere",
    "Yandere",
    "Genki",
    "Shy",
    "Arrogant",
    "Kind",
    "Lazy",
    "Serious",
    "Airhead",
    "Stubborn",
    "Curious",
    "Honest",
    "Sarcastic"
  ], false],
  ["Role", "役割", [
    "Student",
    "Teacher",
    "Maid",
    "Detective",
    "Witch",
    "Idol",
    "Doctor",
    "Priestess",
    "Knight",
    "Hacker",
    "Orphan",
    "Heir"
  ], false],
  [
    "Engages in",
    "行動",
    ["Cooking", "Reading", "Singing", "Swordplay", "Magic", "Painting", "Archery", "Gaming"],
    false
  ],
  ["Subject of", "経験", ["Amnesia", "Curse", "Kidnapping", "Transformation", "Time Loop", "Betrayal"], false],
  ["Engages in (Sexual)", "行動（性的）", ["Romantic Intimacy", "Seduction"], true]
]

export const introEn: ReadonlyArray<string> = [
  "Every summer, the protagonist returns to a quiet seaside town to keep a promise nobody else remembers.",
  "A story about the people who stay behind when everyone else moves on.",
  "When the old clock tower starts ringing at midnight, the school's strangest rumor turns out to be true.",
  "Three friends, one last festival, and a secret that could change everything.",
  "In a city where it never stops raining, a detective and a runaway girl search for a missing star.",
  "The protagonist wakes up in a library that holds every story never written.",
  "A gentle slice-of-life tale of a small café and its unusual regulars.",
  "Choices made in one season echo through the next; not every route ends happily.",
  "An academy for witches opens its doors to a boy with no magic at all.",
  "Letters from the future start arriving, each one a little more desperate than the last."
]
export const introJa: ReadonlyArray<string> = [
  "毎年夏になると、主人公は誰も覚えていない約束を果たすために海辺の町へ帰ってくる。",
  "置いていかれた人たちの、小さな物語。",
  "真夜中に時計塔の鐘が鳴り始めたとき、学園の噂は本当になった。",
  "三人の友達、最後の夏祭り、そして全てを変える秘密。",
  "雨の止まない街で、探偵と家出少女は消えた星を探す。",
  "目を覚ますと、そこは書かれなかった物語の眠る図書館だった。",
  "小さな喫茶店と、少し変わった常連客たちの日常。",
  "ある季節の選択が、次の季節にこだまする。"
]
export const introZh: ReadonlyArray<string> = [
  "每年夏天，主人公都会回到海边小镇，去履行一个无人记得的约定。",
  "这是一个关于留下来的人们的故事。",
  "午夜钟声响起时，校园里最奇怪的传说成真了。",
  "在永不停雨的城市里，侦探与离家出走的少女寻找一颗消失的星星。"
]
export const introKo: ReadonlyArray<string> = [
  "매년 여름, 주인공은 아무도 기억하지 못하는 약속을 지키기 위해 바닷가 마을로 돌아온다.",
  "남겨진 사람들에 관한 작은 이야기.",
  "비가 그치지 않는 도시에서 탐정과 가출 소녀는 사라진 별을 찾는다."
]
