// expect: 5:3 do-while
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  int i = 0;
  do {
    B[0] = A[0];
  } while (0);
}
