// expect: 4:3 whole array
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  B = A;
}
