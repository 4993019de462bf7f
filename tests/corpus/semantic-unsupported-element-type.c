// expect: 3:20 type
// options: --size N=8
void f(int N, char A[N]) {
  A[0] = 1;
}
